#pragma once
/// \file The bodies of batch/triton_import.hpp (compiled once with COTUNE_SEPARATE_COMPILATION, see
/// detail/config.hpp).

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <optional>
#include <utility>

#include <fmt/core.h>
#include <simdjson.h>

#include <cotune/core/config.hpp>
#include <cotune/core/value.hpp>
#include <cotune/detail/files.hpp>
#include <cotune/detail/json.hpp>
#include <cotune/batch/input_limits.hpp>
#include <cotune/batch/triton_import.hpp>
#include <cotune/tune/tuning_result.hpp>

namespace cotune::batch {

namespace detail {

/// cotune's element type name of a torch dtype ("torch.float16" -> "float16"); nothing if unknown.
[[nodiscard]] COTUNE_DECL std::optional<std::string> element_type_of_dtype(std::string_view dtype) {
  if (!dtype.starts_with("torch.")) return std::nullopt;
  dtype.remove_prefix(6);
  static constexpr std::pair<std::string_view, std::string_view> names[] = {
      {"float32", "float32"}, {"float", "float32"},   {"float64", "float64"}, {"double", "float64"},
      {"float16", "float16"}, {"half", "float16"},    {"bfloat16", "bfloat16"}, {"int8", "int8"},
      {"uint8", "uint8"},     {"int16", "int16"},     {"uint16", "uint16"},   {"int32", "int32"},
      {"int", "int32"},       {"uint32", "uint32"},   {"int64", "int64"},     {"long", "int64"},
      {"uint64", "uint64"},   {"bool", "bool"}};
  for (auto [torch, ours] : names)
    if (dtype == torch) return std::string(ours);
  return std::nullopt;
}

/// The cotune value of one Triton key or kwargs value (an int, a float, a bool or a string).
[[nodiscard]] COTUNE_DECL std::optional<value> value_of_json(simdjson::dom::element e) {
  using simdjson::dom::element_type;
  switch (e.type()) {
  case element_type::INT64: return value(std::int64_t(e.get_int64().value_unsafe()));
  case element_type::UINT64: {
    const std::uint64_t u = e.get_uint64().value_unsafe();
    if (u > static_cast<std::uint64_t>(INT64_MAX)) return std::nullopt;
    return value(static_cast<std::int64_t>(u));
  }
  case element_type::DOUBLE: return value(e.get_double().value_unsafe());
  case element_type::BOOL: return value(e.get_bool().value_unsafe());
  case element_type::STRING: return value(std::string(e.get_string().value_unsafe()));
  default: return std::nullopt;
  }
}

} // namespace detail

COTUNE_DECL database_entry import_triton(std::string_view text, const triton_signature& sig,
                                         std::string_view origin) {
  auto fail = [&](std::string why) { return database_error(fmt::format(COTUNE_FMT("{}: {}"), origin, why)); };
  if (sig.kernel.empty()) throw fail("no kernel name: give the cotune kernel name for this file");
  if (auto why = kernel_name_problem(sig.kernel); !why.empty())
    throw fail(fmt::format(COTUNE_FMT("{}; give the cotune kernel name (--kernel NAME), as a job file would"), why));
  if (sig.device.empty()) throw fail("no device: give the name of the device the file was tuned on");
  if (auto why = text_problem("the device name", sig.device); !why.empty()) throw fail(why);
  if (sig.device.size() > max_text_bytes)
    throw fail(
        fmt::format(COTUNE_FMT("the device name has {} bytes, more than {}"), sig.device.size(), max_text_bytes));
  for (const auto& a : sig.args)
    if (!is_identifier(a.name))
      throw fail(fmt::format(COTUNE_FMT("argument '{}' of the signature is not a C identifier"), a.name));
  if (auto why = input_size_problem(text.size()); !why.empty())
    throw fail(fmt::format(COTUNE_FMT("the file has {}"), why));
  for (const auto& k : sig.key)
    if (std::none_of(sig.args.begin(), sig.args.end(), [&](const auto& a) { return a.name == k && !a.tensor; }))
      throw fail(fmt::format(COTUNE_FMT("key argument '{}' is not a non-tensor argument of the signature"), k));

  simdjson::dom::parser parser;
  const std::string json = cotune::detail::normalize_nonfinite(text); // Triton writes Infinity
  simdjson::dom::element root;
  if (auto err = parser.parse(json).get(root); err != simdjson::SUCCESS) {
    if (auto at = cotune::detail::find_json_syntax_error(text, true))
      throw database_error(fmt::format(COTUNE_FMT("{}:{}:{}: not JSON ({}): is this a Triton .autotune.json file?"),
                                       origin, at->line, at->column, at->what));
    throw fail(
        fmt::format(COTUNE_FMT("not JSON ({}): is this a Triton .autotune.json file?"), simdjson::error_message(err)));
  }
  simdjson::dom::array key, rows;
  if (root["key"].get_array().get(key) != simdjson::SUCCESS ||
      root["configs_timings"].get_array().get(rows) != simdjson::SUCCESS)
    throw fail("not a Triton autotune file (it needs \"key\" and \"configs_timings\" lists)");
  if (const auto n = element_count(rows); n > max_candidates())
    throw fail(
        fmt::format(COTUNE_FMT("configs_timings lists {} configs, more than the limit of {} ({}); is this the file you "
                               "meant? If it is, raise the limit"),
                    n, max_candidates(), max_candidates_knob));

  // The key: values of the key arguments (key= order), then one dtype per tensor argument (argument order).
  std::vector<simdjson::dom::element> parts(key.begin(), key.end());
  const std::size_t tensors = static_cast<std::size_t>(
      std::count_if(sig.args.begin(), sig.args.end(), [](const auto& a) { return a.tensor; }));
  if (parts.size() != sig.key.size() + tensors)
    throw fail(
        fmt::format(COTUNE_FMT("its key has {} values, but the signature gives {} key arguments and {} tensors (= {}): "
                               "check --key and which arguments are tensors"),
                    parts.size(), sig.key.size(), tensors, sig.key.size() + tensors));
  std::vector<std::string> words;
  std::size_t next_tensor = sig.key.size();
  for (const auto& a : sig.args) {
    if (a.tensor) {
      std::string_view dtype;
      if (parts[next_tensor++].get_string().get(dtype) != simdjson::SUCCESS)
        throw fail(fmt::format(COTUNE_FMT("the key's value for tensor '{}' is not a dtype string"), a.name));
      auto type = detail::element_type_of_dtype(dtype);
      if (!type)
        throw fail(
            fmt::format(COTUNE_FMT("tensor '{}' has dtype '{}', which cotune has no element type for"), a.name, dtype));
      words.push_back(fmt::format(COTUNE_FMT("{}: {}"), a.name, *type));
    } else if (auto k = std::find(sig.key.begin(), sig.key.end(), a.name); k != sig.key.end()) {
      auto v = detail::value_of_json(parts[static_cast<std::size_t>(k - sig.key.begin())]);
      if (!v)
        throw fail(fmt::format(COTUNE_FMT("the key's value for '{}' is not a number, a bool or a string"), a.name));
      words.push_back(fmt::format(COTUNE_FMT("{}={}"), a.name, v->text()));
    }
  }
  std::string key_text;
  for (const auto& w : words) key_text += (key_text.empty() ? "" : ", ") + w;

  tuning_result r;
  r.kernel = sig.kernel;
  r.key_text = key_text;
  r.made = provenance::here(sig.device);
  r.made.host = "triton import";
  if (!sig.date.empty()) r.made.date = sig.date;
  r.from_cache = true;
  std::size_t row_index = 0;
  for (auto row : rows) {
    const std::size_t at = row_index++;
    simdjson::dom::array pair;
    simdjson::dom::object fields, kwargs;
    simdjson::dom::array times;
    if (row.get_array().get(pair) != simdjson::SUCCESS || pair.size() != 2 ||
        pair.at(0).get_object().get(fields) != simdjson::SUCCESS || pair.at(1).get_array().get(times) != simdjson::SUCCESS)
      throw fail(fmt::format(COTUNE_FMT("configs_timings[{}] is not a [config, times] pair"), at));
    config c;
    // A key given twice: "num_warps": 4, "num_warps": -8 must not pass as 4.
    auto unique_keys = [&](simdjson::dom::object o, std::string_view where) {
      if (auto k = repeated_key(o))
        throw fail(fmt::format(COTUNE_FMT("configs_timings[{}]: '{}' is given twice in {}"), at, *k, where));
    };
    unique_keys(fields, "the config");
    if (fields["kwargs"].get_object().get(kwargs) == simdjson::SUCCESS) {
      unique_keys(kwargs, "its kwargs");
      if (kwargs.size() > max_axes)
        throw fail(fmt::format(COTUNE_FMT("configs_timings[{}]: {} kwargs, more than the {} a space may have"), at,
                               kwargs.size(), max_axes));
      for (auto [name, v] : kwargs) {
        auto cv = detail::value_of_json(v);
        if (!cv)
          throw fail(
              fmt::format(COTUNE_FMT("configs_timings[{}]: kwarg '{}' is not a number, a bool or a string"), at, name));
        if (!is_identifier(name))
          throw fail(fmt::format(
              COTUNE_FMT("configs_timings[{}]: kwarg '{}' is not a C identifier, so not a cotune parameter"), at,
              name));
        c.set(name, *cv);
      }
    }
    if (auto why = params_problem(c); !why.empty())
      throw fail(fmt::format(COTUNE_FMT("configs_timings[{}]: {}"), at, why));
    launch_options launch;
    // Missing (or null, for maxnreg): Triton's default. Anything else must be an integer in range,
    // checked before it is narrowed to int.
    auto read_int = [&](const char* name) -> std::optional<int> {
      simdjson::dom::element v;
      if (fields[name].get(v) != simdjson::SUCCESS || v.is_null()) return std::nullopt;
      std::int64_t n = 0;
      if (v.get_int64().get(n) != simdjson::SUCCESS)
        throw fail(fmt::format(COTUNE_FMT("configs_timings[{}]: {} is not an integer"), at, name));
      if (n < 1 || n > max_launch_option)
        throw fail(fmt::format(COTUNE_FMT("configs_timings[{}]: {} = {} is out of range; Triton runs {} in [1, {}]"),
                               at, name, n, name, max_launch_option));
      return static_cast<int>(n);
    };
    launch.num_warps = read_int("num_warps").value_or(launch.num_warps);
    launch.num_stages = read_int("num_stages").value_or(launch.num_stages);
    launch.num_ctas = read_int("num_ctas").value_or(launch.num_ctas);
    launch.maxnreg = read_int("maxnreg");
    if (auto why = triton_launch_problem(launch); !why.empty())
      throw fail(fmt::format(COTUNE_FMT("configs_timings[{}]: {}"), at, why));
    c.with_launch(launch);

    candidate_result cr{c};
    if (const auto n = element_count(times); n > 3)
      throw fail(
          fmt::format(COTUNE_FMT("configs_timings[{}] has {} times; Triton writes 1, or 3 (median, p20, p80)"), at, n));
    std::vector<double> t;
    for (auto x : times) {
      double d = 0; // Infinity or NaN in Triton's file (now null) reads as +inf: the config failed there
      if (!cotune::detail::json_read_timing(x, d))
        throw fail(fmt::format(COTUNE_FMT("configs_timings[{}]: a time is not a number"), at));
      t.push_back(d);
    }
    if (t.empty()) throw fail(fmt::format(COTUNE_FMT("configs_timings[{}] has no times"), at));
    while (t.size() < 3) t.push_back(t.front()); // a single time: Triton's return_mode without quantiles
    if (std::isfinite(t[0])) {
      if (auto why = time_problem({t[0], t[1], t[2]}); !why.empty())
        throw fail(fmt::format(COTUNE_FMT("configs_timings[{}]: {}"), at, why));
      cr.status = candidate_status::ok;
      cr.time = {t[0], t[1], t[2]};
    } else {
      cr.status = candidate_status::error;
      cr.reason = "failed when Triton tuned it (its times are Infinity)";
    }
    r.candidates.push_back(std::move(cr));
  }
  auto best = select_best(r.candidates);
  if (!best) throw fail("no config ran when Triton tuned it (every time is Infinity): nothing to import");
  r.winner = *best;
  auto entry = database_entry::from(r);
  // What the signature adds (the key's text) is held to what a database reader accepts, here, with the file named.
  if (auto why = entry.problem(); !why.empty()) throw fail(why);
  return entry;
}

COTUNE_DECL database_entry import_triton_file(const std::filesystem::path& file, const triton_signature& sig) {
  return import_triton(read_input_file<database_error>(file, "Triton autotune file"), sig, file.string());
}

COTUNE_DECL std::string triton_kernel_name(std::string_view file_name) {
  constexpr std::string_view suffix = ".autotune.json";
  if (const auto slash = file_name.rfind('/'); slash != std::string_view::npos) file_name.remove_prefix(slash + 1);
  if (file_name.ends_with(suffix)) file_name.remove_suffix(suffix.size());
  return std::string(file_name);
}

} // namespace cotune::batch
