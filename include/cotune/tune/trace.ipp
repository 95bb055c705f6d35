#pragma once
/// \file The bodies of tune/trace.hpp (compiled once with COTUNE_SEPARATE_COMPILATION, see
/// detail/config.hpp).

#include <cerrno>
#include <chrono>
#include <cstdio>
#include <cstring>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <variant>

#include <unistd.h>

#include <fmt/core.h>

#include <cotune/detail/json.hpp>
#include <cotune/knobs/knobs.hpp>
#include <cotune/tune/trace.hpp>
#include <cotune/tune/tuning_result.hpp>

namespace cotune {

namespace detail {

COTUNE_DECL double trace_us(std::chrono::steady_clock::time_point t) {
  static const auto epoch = std::chrono::steady_clock::now();
  return t <= epoch ? 0.0 : std::chrono::duration<double, std::micro>(t - epoch).count();
}

COTUNE_DECL trace_observer* trace_from_knobs() {
  const auto wanted = knobs().autotuning.trace.get();
  if (!wanted || wanted->empty()) return nullptr;
  (void)trace_us(std::chrono::steady_clock::now()); // the epoch starts at the first tuning's first event
  static std::mutex mutex;
  static std::map<std::string, std::unique_ptr<trace_observer>> observers; // one writer per file, for good
  std::lock_guard lock(mutex);
  auto& o = observers[*wanted];
  if (!o) o = std::make_unique<trace_observer>(*wanted);
  return o.get();
}

} // namespace detail

namespace detail {

// The document's end, rewritten after every append so that the file is always complete.
inline constexpr std::string_view trace_tail = "\n],\"displayTimeUnit\":\"ms\"}\n";

COTUNE_DECL std::string trace_meta(const char* what, std::size_t pid, std::size_t tid, const std::string& name) {
  return fmt::format(COTUNE_FMT(",\n{{\"name\":\"{}\",\"ph\":\"M\",\"pid\":{},\"tid\":{},\"args\":{{\"name\":{}}}}}"),
                     what, pid, tid, detail::json_quoted(name));
}

COTUNE_DECL std::string trace_sort(const char* what, std::size_t pid, std::size_t tid, std::size_t index) {
  return fmt::format(
      COTUNE_FMT(",\n{{\"name\":\"{}\",\"ph\":\"M\",\"pid\":{},\"tid\":{},\"args\":{{\"sort_index\":{}}}}}"), what, pid,
      tid, index);
}

} // namespace detail

COTUNE_DECL trace_observer::~trace_observer() {
  if (file_) std::fclose(file_);
}

COTUNE_DECL std::string trace_observer::path() const {
  std::string out;
  for (std::size_t i = 0; i < path_.size(); ++i) {
    if (path_[i] == '%' && i + 1 < path_.size() && path_[i + 1] == 'p') {
      out += std::to_string(::getpid());
      ++i;
    } else {
      out += path_[i];
    }
  }
  return out;
}

COTUNE_DECL std::optional<std::string> trace_observer::take_error() {
  std::lock_guard lock(mutex_);
  return std::exchange(error_, std::nullopt);
}

COTUNE_DECL std::pair<std::size_t, std::size_t> trace_observer::place(const trace_span& s, std::string& meta) {
  const bool compile = s.phase == trace_phase::compile;
  const std::string process = compile ? std::string("compile pool") : "device " + s.track;
  auto [p, new_process] = processes_.try_emplace(process, processes_.size() + 2); // 1: the tunings
  const std::size_t pid = p->second;
  if (new_process) {
    meta += detail::trace_meta("process_name", pid, 0, process);
    meta += detail::trace_sort("process_sort_index", pid, 0, pid);
  }
  // An isolated measurement ran in another process (a forked copy, a device worker): its own track.
  std::string thread = compile ? fmt::format(COTUNE_FMT("compile thread {}"), s.thread)
                               : (s.isolated.empty() ? fmt::format(COTUNE_FMT("device thread {}"), s.thread)
                                                     : fmt::format(COTUNE_FMT("isolated ({})"), s.isolated));
  const std::size_t tid = s.isolated.empty() ? s.thread : 1000000 + pid;
  if (threads_.try_emplace({pid, thread}, tid).second) {
    meta += detail::trace_meta("thread_name", pid, tid, thread);
    meta += detail::trace_sort("thread_sort_index", pid, tid, s.isolated.empty() ? tid : 0);
  }
  return {pid, tid};
}

COTUNE_DECL void trace_observer::on_event(const tuning_event& e) {
  const auto* selected = std::get_if<tuning_selected>(&e);
  if (!selected || !selected->timeline || !selected->result || selected->result->from_cache) return;
  const tuning_result& r = *selected->result;
  const tuning_timeline& t = *selected->timeline;
  std::lock_guard lock(mutex_);
  if (failed_) return;
  std::string out;
  const std::size_t tuning = ++tunings_;
  const std::string name = fmt::format(COTUNE_FMT("{} [{}]"), r.kernel, r.key_text);
  out += detail::trace_meta("thread_name", 1, tuning, fmt::format(COTUNE_FMT("tuning {}: {}"), tuning, name));
  const double start = detail::trace_us(t.start());
  out += fmt::format(
      COTUNE_FMT(",\n{{\"name\":{},\"cat\":\"tuning\",\"ph\":\"X\",\"ts\":{:.3f},\"dur\":{:.3f},\"pid\":1,\"tid\":{},"
                 "\"args\":{{\"kernel\":{},\"key\":{},\"candidates\":{},\"winner\":{},\"best\":{},\"phases\":{},"
                 "\"wall_ms\":{:.3f},\"lower_bound_ms\":{:.3f},\"compile_busy_ms\":{:.3f},\"measure_busy_ms\":{:.3f},"
                 "\"compile_threads\":{},\"devices\":{}}}}}"),
      detail::json_quoted("tune " + name), start, std::max(0.0, detail::trace_us(t.end()) - start), tuning,
      detail::json_quoted(r.kernel), detail::json_quoted(r.key_text), r.candidates.size(), r.winner,
      detail::json_quoted(r.shown(r.best())), detail::json_quoted(r.phases.text()), r.wall_ms,
      r.phases.lower_bound_ms(), r.phases.busy.compile, r.phases.busy.measure, r.phases.compile_threads,
      r.phases.devices);
  for (const auto& s : t.spans()) {
    const auto [pid, tid] = place(s, out);
    const bool one = s.candidate < r.candidates.size();
    const double ts = detail::trace_us(s.start);
    std::string args = fmt::format(COTUNE_FMT("\"kernel\":{},\"key\":{},\"tuning\":{}"), detail::json_quoted(r.kernel),
                                   detail::json_quoted(r.key_text), tuning);
    if (one) {
      const auto& c = r.candidates[s.candidate];
      args += fmt::format(COTUNE_FMT(",\"candidate\":{},\"config\":{},\"status\":{}"), s.candidate,
                          detail::json_quoted(r.shown(c.cfg)), detail::json_quoted(to_string(c.status)));
    }
    if (!s.isolated.empty()) args += fmt::format(COTUNE_FMT(",\"isolated\":{}"), detail::json_quoted(s.isolated));
    if (!s.note.empty()) args += fmt::format(COTUNE_FMT(",\"note\":{}"), detail::json_quoted(s.note));
    out += fmt::format(
        COTUNE_FMT(",\n{{\"name\":{},\"cat\":\"{}\",\"ph\":\"X\",\"ts\":{:.3f},\"dur\":{:.3f},\"pid\":{},\"tid\":{},"
                   "\"args\":{{{}}}}}"),
        detail::json_quoted(one ? fmt::format(COTUNE_FMT("{} #{}"), to_string(s.phase), s.candidate)
                                : std::string(to_string(s.phase))),
        to_string(s.phase), ts, std::max(0.0, detail::trace_us(s.end) - ts), pid, tid, args);
  }
  append(out);
}

COTUNE_DECL void trace_observer::append(const std::string& events) {
  auto fail = [&](const char* what) {
    failed_ = true;
    error_ = fmt::format(COTUNE_FMT("cannot {} the trace file '{}' ({}); no trace is written"), what, path(),
                         std::strerror(errno));
    if (file_) std::fclose(file_);
    file_ = nullptr;
  };
  if (!file_) {
    file_ = std::fopen(path().c_str(), "w");
    if (!file_) return fail("create");
    const std::string head = "{\"traceEvents\":[\n" + detail::trace_meta("process_name", 1, 0, "cotune tunings").substr(2) +
                             detail::trace_sort("process_sort_index", 1, 0, 1);
    if (std::fputs(head.c_str(), file_) < 0) return fail("write");
  } else if (std::fseek(file_, -static_cast<long>(detail::trace_tail.size()), SEEK_END) != 0) {
    return fail("seek in");
  }
  if (std::fputs(events.c_str(), file_) < 0 || std::fwrite(detail::trace_tail.data(), 1, detail::trace_tail.size(), file_) != detail::trace_tail.size() ||
      std::fflush(file_) != 0)
    return fail("write");
}

} // namespace cotune
