#pragma once
/// \file `cotune::trace_observer`: every measured tuning's timeline (tune/tuning_timeline.hpp) as a
/// Chrome trace (the JSON trace event format that Perfetto and chrome://tracing open). COTUNE_TRACE=FILE
/// installs one for the whole process; a program may also add its own to `tune_options::observers`.
///
/// One writer per file: every tuning of the process (concurrent ones too) appends to it under one
/// lock, and the file is a complete JSON document after each tuning, so a trace read while the
/// program still runs (or after it was killed between tunings) opens too. `%p` in the name becomes
/// the process id (one file per process when several write at once); an existing file is replaced.
/// Layout (docs/tracing.md): process 1 holds one track per tuning, process 2 the compile pool's
/// threads, processes 3, 4, ... one device thread each (with isolated measurements on a track of
/// their own); every span is a complete event ("ph": "X", microseconds from the process's start).

#include <cotune/detail/config.hpp> // first: a pre-C++20 compile stops at its one message
#include <cstddef>
#include <cstdio>
#include <map>
#include <mutex>
#include <optional>
#include <string>
#include <utility>

#include <cotune/detail/config.hpp>
#include <cotune/tune/events.hpp>
#include <cotune/tune/detail/tuning_timeline.hpp>

namespace cotune {

/// Writes the timelines of the tunings it is told about to one Chrome trace file.
class trace_observer final : public observer {
public:
  /// Writes to `path` (`%p`: this process's id), created at the first tuning.
  explicit trace_observer(std::string path) : path_(std::move(path)) {}
  COTUNE_DECL ~trace_observer() override;
  trace_observer(const trace_observer&) = delete;
  trace_observer& operator=(const trace_observer&) = delete;

  /// The file written (`%p` replaced).
  [[nodiscard]] COTUNE_DECL std::string path() const;

  /// Why the file could not be written, once (then nothing: the trace is off for this observer).
  [[nodiscard]] COTUNE_DECL std::optional<std::string> take_error();

protected:
  COTUNE_DECL void on_event(const tuning_event& e) override;

private:
  /// Appends `events` (JSON objects, each preceded by a comma) and closes the document again.
  COTUNE_DECL void append(const std::string& events);
  /// The trace's process and thread numbers of a span's track, naming them in `meta` when new.
  [[nodiscard]] std::pair<std::size_t, std::size_t> place(const trace_span& s, std::string& meta);

  std::string path_;
  std::mutex mutex_;
  std::FILE* file_ = nullptr;
  bool failed_ = false;
  std::optional<std::string> error_;
  std::size_t tunings_ = 0;
  std::map<std::string, std::size_t> processes_;                 ///< track -> trace pid
  std::map<std::pair<std::size_t, std::string>, std::size_t> threads_; ///< (pid, thread name) -> tid
};

namespace detail {

/// Microseconds from this process's trace epoch to `t` (0 before it). The epoch starts when COTUNE_TRACE
/// first sees an event (trace_from_knobs), at the start of the first traced tuning; not at static
/// initialisation, which would put code in every file that includes this header.
[[nodiscard]] COTUNE_DECL double trace_us(std::chrono::steady_clock::time_point t);

/// The trace observer COTUNE_TRACE asks for (one per file name for the whole process), or nullptr.
[[nodiscard]] COTUNE_DECL trace_observer* trace_from_knobs();

} // namespace detail

} // namespace cotune

#if COTUNE_HEADER_ONLY
#include <cotune/tune/trace.ipp>
#endif
