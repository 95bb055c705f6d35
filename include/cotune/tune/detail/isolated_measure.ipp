#pragma once
/// \file The bodies of tune/isolated_measure.hpp's fork_measurer (compiled once with
/// COTUNE_SEPARATE_COMPILATION, see detail/config.hpp).

#include <algorithm>
#include <chrono>
#include <cstdint>
#include <cstring>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include <fmt/core.h>

#include <cotune/core/errors.hpp>
#include <cotune/detail/fork_server.hpp>
#include <cotune/knobs/knobs.hpp>
#include <cotune/tune/detail/isolated_measure.hpp>

namespace cotune::detail {

COTUNE_DECL fork_measurer::fork_measurer(measure_fn measure, const void* context, finals_fn finals)
    : measure_(measure), context_(context), finals_(finals) {}

COTUNE_DECL void fork_measurer::start(const bench_options& o) {
  if (server_) return;
  base_ = o;
  // One persistent worker, replaced after a crash; 1,000,000 jobs: never retired for age (a
  // tuning's candidates are one kernel's, and the server dies with the tuning).
  server_ = std::make_unique<fork_server>(&serve, this, nullptr,
                                          warm_workers{.count = 1, .jobs_per_worker = 1000000, .prestart = 1});
  lane_ = std::make_unique<fork_server_lane>(*server_);
}

COTUNE_DECL void fork_measurer::drain_ahead(std::chrono::milliseconds limit) {
  if (!ahead_) return;
  job_result guess = lane_->receive(std::chrono::steady_clock::now() + limit);
  const bool usable = guess.outcome != job_outcome::lost && !(guess.outcome == job_outcome::ok && guess.reply == "M");
  if (usable) drained_.emplace_back(*ahead_, std::make_unique<job_result>(std::move(guess)));
  ahead_.reset();
}

// A finals request: 'F', the budgets, the round, the count and the finalists' indices (never
// sizeof(request) bytes long, which a candidate's request is).
COTUNE_DECL std::optional<std::string> fork_measurer::finals(const std::vector<std::size_t>& finalists,
                                                             const bench_options& full, const finals_round& round,
                                                             std::chrono::milliseconds limit, std::string& why) {
  if (!finals_) {
    why = "no finals in this copy";
    return std::nullopt;
  }
  start(full);
  drain_ahead(std::chrono::milliseconds(std::max<std::int64_t>(1, knobs().bench.timeout_ms.get())));
  std::string bytes = "F";
  auto put = [&](const auto& v) { bytes.append(reinterpret_cast<const char*>(&v), sizeof v); };
  put(full.warmup_ms);
  put(full.rep_ms);
  put(static_cast<std::uint64_t>(round.round));
  put(static_cast<std::uint8_t>(round.cold));
  put(round.settle_ms);
  put(static_cast<std::uint64_t>(finalists.size()));
  for (auto i : finalists) put(static_cast<std::uint64_t>(i));
  lane_->send(bytes);
  const job_result done = lane_->receive(std::chrono::steady_clock::now() + limit);
  switch (done.outcome) {
  case job_outcome::ok:
    if (done.reply.size() >= 1 && done.reply[0] == 'R') return done.reply.substr(1);
    why = done.reply == "M" ? "the isolated copy predates a finalist's binary"
                            : "the isolated copy sent a malformed report";
    return std::nullopt;
  case job_outcome::failed:
    why = done.detail;
    return std::nullopt;
  case job_outcome::crashed:
    why = fmt::format(COTUNE_FMT("its isolated benchmark process was {}"), done.detail);
    return std::nullopt;
  case job_outcome::timed_out:
  case job_outcome::cancelled:
    why = fmt::format(COTUNE_FMT("they were still running after {} ms; killed"), limit.count());
    return std::nullopt;
  case job_outcome::lost:
    stop();
    why = done.detail;
    return std::nullopt;
  }
  return std::nullopt;
}

COTUNE_DECL fork_measurer::~fork_measurer() { stop(); }

COTUNE_DECL void fork_measurer::stop() noexcept {
  ahead_.reset();
  lane_.reset(); // before its server
  server_.reset();
}

COTUNE_DECL std::string fork_measurer::serve(const void* self, std::string_view bytes) {
  const auto& me = *static_cast<const fork_measurer*>(self);
  request r{};
  if (bytes.size() != sizeof r && !bytes.empty() && bytes[0] == 'F' && me.finals_) {
    std::size_t at = 1;
    auto get = [&](auto& v) {
      if (bytes.size() - at < sizeof v) throw error("isolated finals: a malformed request");
      std::memcpy(&v, bytes.data() + at, sizeof v);
      at += sizeof v;
    };
    bench_options o = me.base_;
    get(o.warmup_ms);
    get(o.rep_ms);
    std::uint64_t round = 0;
    std::uint8_t cold = 0;
    finals_round which;
    get(round);
    get(cold);
    get(which.settle_ms);
    which.round = static_cast<std::size_t>(round);
    which.cold = cold != 0;
    std::uint64_t count = 0;
    get(count);
    if (count > (bytes.size() - at) / sizeof(std::uint64_t)) throw error("isolated finals: a malformed request");
    std::vector<std::size_t> finalists;
    for (std::uint64_t k = 0; k < count; ++k) {
      std::uint64_t i = 0;
      get(i);
      finalists.push_back(static_cast<std::size_t>(i));
    }
    auto reply = me.finals_(me.context_, finalists, o, which);
    return reply ? "R" + *reply : std::string("M");
  }
  if (bytes.size() != sizeof r) throw error("isolated measurement: a malformed request");
  std::memcpy(&r, bytes.data(), sizeof r);
  bench_options o = me.base_;
  o.warmup_ms = r.warmup_ms;
  o.rep_ms = r.rep_ms;
  const auto values = me.measure_(me.context_, static_cast<std::size_t>(r.index), o);
  if (!values) return "M";
  std::string out = "R";
  out.append(reinterpret_cast<const char*>(values->data()), values->size() * sizeof(double));
  return out;
}

COTUNE_DECL std::vector<double> fork_measurer::measure(std::size_t index, const bench_options& o,
                                                       std::string_view kernel, std::string_view shown,
                                                       std::optional<std::size_t> next) {
  const auto limit = std::chrono::milliseconds(std::max<std::int64_t>(1, knobs().bench.timeout_ms.get()));
  const request r{index, o.warmup_ms, o.rep_ms};
  auto bytes = [](const request& q) { return std::string_view(reinterpret_cast<const char*>(&q), sizeof q); };
  for (int attempt = 0; attempt < 2; ++attempt) {
    start(o);
    std::optional<job_result> kept; // measured already, as a wrong guess
    const auto drained = std::find_if(drained_.begin(), drained_.end(), [&](const auto& d) { return d.first == r; });
    if (drained != drained_.end()) {
      kept = std::move(*drained->second);
      drained_.erase(drained);
    } else if (ahead_ && *ahead_ == r) {
      ahead_.reset(); // sent with the last candidate: the first in flight
    } else {
      drain_ahead(limit); // a wrong guess: its outcome is kept for when it is asked for
      lane_->send(bytes(r));
    }
    const bool known = next && std::any_of(drained_.begin(), drained_.end(), [&](const auto& d) {
      return d.first == request{*next, o.warmup_ms, o.rep_ms};
    });
    if (next && *next != index && attempt == 0 && !ahead_ && !known) {
      ahead_ = request{*next, o.warmup_ms, o.rep_ms};
      lane_->send(bytes(*ahead_));
    }
    const job_result done = kept ? *std::move(kept) : lane_->receive(std::chrono::steady_clock::now() + limit);
    isolated_result run;
    switch (done.outcome) {
    case job_outcome::ok:
      if (done.reply == "M") { // the copy predates this candidate's binary: fork a fresh one
        stop();
        continue;
      }
      if (done.reply.empty() || done.reply[0] != 'R' || (done.reply.size() - 1) % sizeof(double) != 0) {
        run.end = isolated_result::ending::crashed;
        run.detail = "sent a malformed report";
        break;
      }
      run.end = isolated_result::ending::returned;
      run.values.resize((done.reply.size() - 1) / sizeof(double));
      std::memcpy(run.values.data(), done.reply.data() + 1, done.reply.size() - 1);
      break;
    case job_outcome::failed:
      run.end = isolated_result::ending::threw;
      run.detail = done.detail;
      break;
    case job_outcome::crashed:
      run.end = isolated_result::ending::crashed;
      run.detail = done.detail;
      break;
    case job_outcome::timed_out:
    case job_outcome::cancelled:
      run.end = isolated_result::ending::hung;
      run.detail =
          fmt::format(COTUNE_FMT("still running after {} ms (COTUNE_BENCH_TIMEOUT_MS); killed"), limit.count());
      break;
    case job_outcome::lost:
      stop(); // the next candidate forks a new server
      throw error(
          fmt::format(COTUNE_FMT("kernel '{}' with config {{{}}}: its isolated benchmark process could not run it: {}"),
                      kernel, shown, done.detail));
    }
    return isolated_values(std::move(run), kernel, shown, "its isolated benchmark process was ");
  }
  throw error(
      fmt::format(COTUNE_FMT("kernel '{}' with config {{{}}}: a fresh isolated benchmark process has no binary for it"),
                  kernel, shown));
}

COTUNE_DECL std::string encode_round(const finals_progress& progress) {
  std::string out;
  auto put = [&](const auto& v) { out.append(reinterpret_cast<const char*>(&v), sizeof v); };
  put(static_cast<std::uint64_t>(progress.samples.size()));
  for (std::size_t k = 0; k < progress.samples.size(); ++k) {
    if (const auto& failed = progress.failures.at(k)) {
      put(static_cast<std::int32_t>(failed->status));
      put(static_cast<std::uint64_t>(failed->reason.size()));
      out += failed->reason;
      continue;
    }
    put(static_cast<std::int32_t>(candidate_status::ok));
    put(static_cast<std::uint64_t>(progress.samples[k].size()));
    out.append(reinterpret_cast<const char*>(progress.samples[k].data()), progress.samples[k].size() * sizeof(double));
  }
  return out;
}

COTUNE_DECL bool decode_round(std::string_view bytes, const std::vector<std::size_t>& at, finals_progress& progress) {
  std::size_t pos = 0;
  auto get = [&](auto& v) {
    if (bytes.size() - pos < sizeof v) return false;
    std::memcpy(&v, bytes.data() + pos, sizeof v);
    pos += sizeof v;
    return true;
  };
  std::uint64_t count = 0;
  if (!get(count) || count != at.size()) return false;
  std::vector<std::pair<std::int32_t, std::string>> decoded; // status, and the reason or the samples' bytes
  for (std::uint64_t k = 0; k < count; ++k) {
    std::int32_t status = 0;
    std::uint64_t size = 0;
    if (!get(status) || !get(size) || status < 0 ||
        status > static_cast<std::int32_t>(candidate_status::wrong_result) ||
        static_cast<candidate_status>(status) == candidate_status::not_run ||
        static_cast<candidate_status>(status) == candidate_status::not_evaluated)
      return false;
    const bool ok = static_cast<candidate_status>(status) == candidate_status::ok;
    if (ok && size > (bytes.size() - pos) / sizeof(double)) return false;
    const std::uint64_t length = ok ? size * sizeof(double) : size;
    if (length > bytes.size() - pos) return false;
    decoded.emplace_back(status, std::string(bytes.substr(pos, length)));
    pos += length;
  }
  if (pos != bytes.size()) return false;
  for (std::size_t k = 0; k < at.size(); ++k) {
    const std::size_t j = at[k];
    if (j >= progress.samples.size() || j >= progress.failures.size()) return false;
  }
  for (std::size_t k = 0; k < at.size(); ++k) {
    const std::size_t j = at[k];
    auto& [status, payload] = decoded[k];
    if (static_cast<candidate_status>(status) != candidate_status::ok) {
      progress.failures[j] = final_failure{static_cast<candidate_status>(status), std::move(payload)};
      continue;
    }
    const std::size_t n = payload.size() / sizeof(double);
    const std::size_t old = progress.samples[j].size();
    progress.samples[j].resize(old + n);
    std::memcpy(progress.samples[j].data() + old, payload.data(), payload.size());
  }
  return true;
}

COTUNE_DECL std::vector<double> isolated_values(isolated_result run, std::string_view kernel, std::string_view shown,
                                                std::string_view process) {
  switch (run.end) {
  case isolated_result::ending::returned: return std::move(run.values);
  case isolated_result::ending::threw:
    if (run.detail.starts_with(wrong_prefix)) throw wrong_result(run.detail);
    if (run.kind == 'l') throw launch_error(run.detail);
    throw error(run.detail);
  case isolated_result::ending::crashed:
    throw candidate_crashed(
        fmt::format(COTUNE_FMT("kernel '{}' with config {{{}}}: {}{}; this candidate is lost, the tuning "
                               "goes on (COTUNE_ISOLATE)"),
                    kernel, shown, process, run.detail));
  case isolated_result::ending::hung:
    throw candidate_hung(
        fmt::format(COTUNE_FMT("kernel '{}' with config {{{}}}: {}{}"), kernel, shown, process, run.detail));
  case isolated_result::ending::refused: break;
  }
  throw error(fmt::format(COTUNE_FMT("kernel '{}' with config {{{}}}: {}"), kernel, shown, run.detail));
}

} // namespace cotune::detail
