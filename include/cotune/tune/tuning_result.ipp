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


COTUNE_DECL provenance provenance::here(std::string device) {
  char name[256] = {};
  ::gethostname(name, sizeof name - 1);
  std::time_t now = std::time(nullptr);
  std::tm tm{};
  ::gmtime_r(&now, &tm);
  char date[32];
  std::strftime(date, sizeof date, "%Y-%m-%dT%H:%M:%SZ", &tm);
  return {name, std::move(device), date, version};
}

COTUNE_DECL std::optional<std::size_t> select_best(const std::vector<candidate_result>& cs) {
  constexpr double steadier_by = 2.0;
  constexpr double noise_floor = 1e-3;
  std::optional<std::size_t> best;
  for (std::size_t i = 0; i < cs.size(); ++i) {
    if (cs[i].status != candidate_status::ok) continue;
    if (!best) {
      best = i;
      continue;
    }
    const auto& b = cs[*best];
    if (b.screened_only != cs[i].screened_only) {
      if (b.screened_only) best = i;
    } else if (cs[i].time < b.time) {
      best = i;
    }
  }
  if (!best || !cs[*best].interleaved) return best;
  const auto spread = [](const candidate_result& c) { return c.time[2] - c.time[1]; };
  // A result stored before the finals recorded their noise has none (nor has a non-finite one): its relative
  // p20-p80 spread stands in.
  const auto noise = [&](const candidate_result& c) {
    const bool known = c.samples > 0 && std::isfinite(c.rsd) && c.rsd >= 0;
    const double n = known ? c.rsd : (c.time[0] > 0 ? spread(c) / c.time[0] : 0.0);
    return std::max(std::isfinite(n) ? n : 0.0, noise_floor);
  };
  const auto& b = cs[*best];
  const double band_top = b.time[0] + spread(b) / 2;
  const auto tied = [&](const candidate_result& c) {
    return c.status == candidate_status::ok && c.interleaved && !c.screened_only &&
           c.time[0] - spread(c) / 2 <= band_top;
  };
  double steadiest = noise(b);
  for (const auto& c : cs)
    if (tied(c)) steadiest = std::min(steadiest, noise(c));
  for (std::size_t i = 0; i < cs.size(); ++i)
    if (tied(cs[i]) && noise(cs[i]) <= steadier_by * steadiest) return i;
  return best;
}

COTUNE_DECL std::string tuning_result::json() const {
  json_writer w;
  w.begin_object().field("format", 1).field("kernel", kernel).field("key", key_text);
  w.field("winner", winner).field("wall_ms", wall_ms);
  if (!launch_options) w.field("launch_options", false);
  w.key("candidates").begin_array();
  for (const auto& c : candidates) {
    w.begin_object().key("config").raw(c.cfg.json()).field("status", to_string(c.status)).field("reason", c.reason);
    w.key("timings_ms").begin_array().value(c.time[0]).value(c.time[1]).value(c.time[2]).end_array();
    w.field("compile_ms", c.compile_ms).field("device", c.device).field("screened", c.screened_only);
    if (c.resumed) w.field("resumed", true);
    if (c.interleaved) w.field("interleaved", true);
    if (std::isfinite(c.screen_ms)) w.field("screen_ms", c.screen_ms);
    if (!c.method.empty()) w.field("method", c.method).field("rsd", c.rsd).field("samples", c.samples);
    w.end_object();
  }
  w.end_array();
  if (phases.known()) {
    const auto times = [&](const phase_times& p) {
      w.begin_object().field("compile", p.compile).field("load", p.load).field("verify", p.verify);
      w.field("measure", p.measure).end_object();
    };
    w.key("phases_ms").begin_object().key("wall");
    times(phases.wall);
    w.field("idle", phases.idle_ms).key("busy");
    times(phases.busy);
    w.field("compile_threads", phases.compile_threads).field("devices", phases.devices).end_object();
  }
  w.key("provenance").begin_object().field("host", made.host).field("device", made.device);
  w.field("date", made.date).field("cotune", made.cotune_version).end_object();
  return std::move(w.end_object()).take() + "\n"; // a text file: newline-terminated
}

} // namespace cotune
