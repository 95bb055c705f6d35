#pragma once
/// \file The body of tuning_result::from_json (compiled once with COTUNE_SEPARATE_COMPILATION, see
/// detail/config.hpp), so that simdjson stays out of the files that only use results.

#include <cmath>
#include <cstdint>
#include <exception>
#include <optional>
#include <string>
#include <string_view>
#include <utility>

#include <simdjson.h>

#include <cotune/core/config.hpp>
#include <cotune/detail/json.hpp>
#include <cotune/tune/tuning_result.hpp>

namespace cotune {

COTUNE_DECL std::optional<tuning_result> tuning_result::from_json(std::string_view text, bool partial) {
  using namespace simdjson;
  dom::parser parser;
  dom::object root;
  if (parser.parse(detail::normalize_nonfinite(text)).get(root) != SUCCESS) return std::nullopt;
  tuning_result r;
  std::int64_t format = 0;
  std::string_view sv;
  if (root["format"].get_int64().get(format) != SUCCESS || format != 1) return std::nullopt;
  if (root["kernel"].get_string().get(sv) != SUCCESS) return std::nullopt;
  r.kernel = sv;
  if (root["key"].get_string().get(sv) != SUCCESS) return std::nullopt;
  r.key_text = sv;
  double wall_ms = 0;
  if (root["wall_ms"].get_double().get(wall_ms) == SUCCESS) r.wall_ms = wall_ms;
  bool launch_options = true;
  if (root["launch_options"].get_bool().get(launch_options) == SUCCESS) r.launch_options = launch_options;
  dom::array cands;
  if (root["candidates"].get_array().get(cands) != SUCCESS) return std::nullopt;
  try {
    for (auto e : cands) {
      candidate_result c;
      dom::element cfg;
      if (e["config"].get(cfg) != SUCCESS) return std::nullopt;
      c.cfg = config::from_json(cfg);
      if (e["status"].get_string().get(sv) != SUCCESS) return std::nullopt;
      auto st = candidate_status_from(sv);
      if (!st) return std::nullopt;
      c.status = *st;
      if (e["reason"].get_string().get(sv) == SUCCESS) c.reason = sv;
      dom::array t;
      if (e["timings_ms"].get_array().get(t) != SUCCESS || t.size() != 3) return std::nullopt;
      std::size_t i = 0;
      for (auto v : t)
        if (!detail::json_read_timing(v, c.time[i++])) return std::nullopt;
      for (double& v : c.time)
        if (std::isnan(v)) v = inf_ms;
      if (c.status == candidate_status::ok && !std::isfinite(c.time[0])) return std::nullopt;
      if (c.status != candidate_status::ok) c.time = {inf_ms, inf_ms, inf_ms};
      std::int64_t dev = -1;
      if (e["device"].get_int64().get(dev) == SUCCESS) c.device = static_cast<int>(dev);
      double compile_ms = 0;
      if (e["compile_ms"].get_double().get(compile_ms) == SUCCESS) c.compile_ms = compile_ms;
      bool screened = false;
      if (e["screened"].get_bool().get(screened) == SUCCESS) c.screened_only = screened;
      bool resumed = false;
      if (e["resumed"].get_bool().get(resumed) == SUCCESS) c.resumed = resumed;
      bool interleaved = false;
      if (e["interleaved"].get_bool().get(interleaved) == SUCCESS) c.interleaved = interleaved;
      double screen_ms = 0;
      if (e["screen_ms"].get_double().get(screen_ms) == SUCCESS && std::isfinite(screen_ms)) c.screen_ms = screen_ms;
      std::string_view method;
      if (e["method"].get_string().get(method) == SUCCESS) c.method = method;
      double rsd = 0;
      if (e["rsd"].get_double().get(rsd) == SUCCESS && std::isfinite(rsd) && rsd >= 0) c.rsd = rsd;
      std::uint64_t samples = 0;
      if (e["samples"].get_uint64().get(samples) == SUCCESS) c.samples = static_cast<std::size_t>(samples);
      r.candidates.push_back(std::move(c));
    }
  } catch (const std::exception&) {
    return std::nullopt;
  }
  auto best = select_best(r.candidates);
  if (!best && !partial) return std::nullopt;
  r.winner = best.value_or(0);
  dom::object phases;
  if (root["phases_ms"].get_object().get(phases) == SUCCESS) {
    const auto times = [](dom::object o, phase_times& p) {
      double v = 0;
      if (o["compile"].get_double().get(v) == SUCCESS) p.compile = v;
      if (o["load"].get_double().get(v) == SUCCESS) p.load = v;
      if (o["verify"].get_double().get(v) == SUCCESS) p.verify = v;
      if (o["measure"].get_double().get(v) == SUCCESS) p.measure = v;
    };
    dom::object part;
    if (phases["wall"].get_object().get(part) == SUCCESS) times(part, r.phases.wall);
    if (phases["busy"].get_object().get(part) == SUCCESS) times(part, r.phases.busy);
    double idle = 0;
    if (phases["idle"].get_double().get(idle) == SUCCESS) r.phases.idle_ms = idle;
    std::uint64_t n = 0;
    if (phases["compile_threads"].get_uint64().get(n) == SUCCESS) r.phases.compile_threads = static_cast<std::size_t>(n);
    if (phases["devices"].get_uint64().get(n) == SUCCESS) r.phases.devices = static_cast<std::size_t>(n);
  }
  dom::object prov;
  if (root["provenance"].get_object().get(prov) == SUCCESS) {
    if (prov["host"].get_string().get(sv) == SUCCESS) r.made.host = sv;
    if (prov["device"].get_string().get(sv) == SUCCESS) r.made.device = sv;
    if (prov["date"].get_string().get(sv) == SUCCESS) r.made.date = sv;
    if (prov["cotune"].get_string().get(sv) == SUCCESS) r.made.cotune_version = sv;
  }
  r.from_cache = true;
  return r;
}

} // namespace cotune
