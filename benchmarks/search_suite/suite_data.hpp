#pragma once
// One space of the search suite, read from its data file (benchmarks/search_suite/data/NAME.json; the
// format is in benchmarks/search_suite/README.md). Shared by bench_search_suite (which replays the
// spaces) and tests/search/test_search_suite_data.cpp (which checks every file parses and holds what
// its header states). Errors name the file and the field.
#include <algorithm>
#include <cmath>
#include <cstddef>
#include <filesystem>
#include <limits>
#include <stdexcept>
#include <string>
#include <vector>

#include <fmt/format.h>
#include <simdjson.h>

#include <cotune/core/config.hpp>
#include <cotune/core/value.hpp>

namespace cotune_bench {

/// One tuning parameter of a space: its values, in the order the file lists them, and its kind.
struct suite_param {
  std::string name;
  bool categorical = false; ///< "kind": "categorical" (else "ordered")
  std::vector<cotune::value> values;
};

/// A whole space: every config and its stored time (+inf: it failed to compile or run).
struct suite_space {
  std::string file, name, description, kernel, family, gpu, source_url, licence;
  // family: the kernel whatever its GPU or problem (convolution, pnpoly, ...)
  std::vector<suite_param> params;
  std::vector<cotune::config> configs;
  std::vector<double> truth;      ///< ms; +inf: failed
  std::size_t stated_size = 0;    ///< the header's "size"
  std::size_t stated_valid = 0;   ///< the header's "valid"
  double stated_optimum = 0;      ///< the header's "optimum"
  std::size_t near_optimal_regions = 0; ///< the header's near_optimal.regions
  double near_optimal_distance = 0;     ///< the header's near_optimal.max_region_distance
  /// One of several problem sizes of a kernel's space (the optional "multi_size" object): the spaces of
  /// one group are the same kernel and configs at other sizes, each named by its tuning key's text
  /// ("M=512, N=512, K=512"). Empty for a space of one size.
  std::string size_group{}, size_key{};

  [[nodiscard]] double optimum() const {
    double best = std::numeric_limits<double>::infinity();
    for (double t : truth) best = std::min(best, t);
    return best;
  }
  [[nodiscard]] double slowest_valid() const {
    double worst = 0;
    for (double t : truth)
      if (std::isfinite(t)) worst = std::max(worst, t);
    return worst;
  }
  [[nodiscard]] std::size_t valid() const {
    return static_cast<std::size_t>(std::count_if(truth.begin(), truth.end(), [](double t) { return std::isfinite(t); }));
  }
  [[nodiscard]] std::size_t categorical_params() const {
    return static_cast<std::size_t>(std::count_if(params.begin(), params.end(), [](const suite_param& p) { return p.categorical; }));
  }
};

namespace detail_suite {

inline cotune::value to_value(simdjson::dom::element e, const std::string& where) {
  switch (e.type()) {
  case simdjson::dom::element_type::INT64: return cotune::value(static_cast<std::int64_t>(e.get_int64().value()));
  case simdjson::dom::element_type::UINT64: return cotune::value(static_cast<std::int64_t>(e.get_uint64().value()));
  case simdjson::dom::element_type::DOUBLE: return cotune::value(e.get_double().value());
  case simdjson::dom::element_type::BOOL: return cotune::value(e.get_bool().value());
  case simdjson::dom::element_type::STRING: return cotune::value(std::string(e.get_string().value()));
  default: throw std::runtime_error(fmt::format("{}: a parameter value must be a number, a boolean or a string", where));
  }
}

} // namespace detail_suite

/// Reads one data file; throws std::runtime_error naming the file and the field on anything malformed.
inline suite_space load_suite_space(const std::filesystem::path& path) {
  using namespace simdjson;
  const std::string file = path.string();
  dom::parser parser;
  dom::element doc;
  if (auto err = parser.load(file).get(doc))
    throw std::runtime_error(fmt::format("{}: not readable JSON ({})", file, error_message(err)));
  auto field = [&](dom::element obj, const char* key) {
    dom::element v;
    if (obj.at_key(key).get(v))
      throw std::runtime_error(fmt::format("{}: missing field \"{}\" (see benchmarks/search_suite/README.md)", file, key));
    return v;
  };
  auto text = [&](dom::element obj, const char* key) {
    std::string_view s;
    if (field(obj, key).get(s)) throw std::runtime_error(fmt::format("{}: field \"{}\" must be a string", file, key));
    return std::string(s);
  };
  auto count = [&](dom::element obj, const char* key) {
    std::uint64_t n = 0;
    if (field(obj, key).get(n)) throw std::runtime_error(fmt::format("{}: field \"{}\" must be a count", file, key));
    return static_cast<std::size_t>(n);
  };
  suite_space s;
  s.file = file;
  if (text(doc, "format") != "cotune-search-suite-1")
    throw std::runtime_error(fmt::format("{}: format is not cotune-search-suite-1", file));
  s.name = text(doc, "name");
  s.description = text(doc, "description");
  const dom::element src = field(doc, "source");
  s.kernel = text(src, "kernel");
  s.family = text(src, "family");
  s.gpu = text(src, "gpu");
  s.source_url = text(src, "url");
  s.licence = text(src, "licence");
  s.stated_size = count(doc, "size");
  s.stated_valid = count(doc, "valid");
  if (field(doc, "optimum").get(s.stated_optimum))
    throw std::runtime_error(fmt::format("{}: field \"optimum\" must be a number", file));
  const dom::element near = field(doc, "near_optimal");
  s.near_optimal_regions = count(near, "regions");
  if (field(near, "max_region_distance").get(s.near_optimal_distance))
    throw std::runtime_error(fmt::format("{}: near_optimal.max_region_distance must be a number", file));

  if (dom::element multi; doc.at_key("multi_size").get(multi) == SUCCESS) {
    s.size_group = text(multi, "group");
    s.size_key = text(multi, "key");
  }

  dom::array params;
  if (field(doc, "params").get(params)) throw std::runtime_error(fmt::format("{}: \"params\" must be an array", file));
  for (dom::element p : params) {
    suite_param sp;
    sp.name = text(p, "name");
    const std::string kind = text(p, "kind");
    if (kind != "ordered" && kind != "categorical")
      throw std::runtime_error(fmt::format("{}: parameter {}: kind \"{}\" is neither \"ordered\" nor \"categorical\"", file,
                                           sp.name, kind));
    sp.categorical = kind == "categorical";
    dom::array values;
    if (field(p, "values").get(values))
      throw std::runtime_error(fmt::format("{}: parameter {}: \"values\" must be an array", file, sp.name));
    for (dom::element v : values) sp.values.push_back(detail_suite::to_value(v, file + ": parameter " + sp.name));
    if (sp.values.empty()) throw std::runtime_error(fmt::format("{}: parameter {} has no values", file, sp.name));
    s.params.push_back(std::move(sp));
  }

  dom::array results;
  if (field(doc, "results").get(results)) throw std::runtime_error(fmt::format("{}: \"results\" must be an array", file));
  std::size_t row = 0;
  for (dom::element r : results) {
    dom::array cells;
    if (r.get(cells) || cells.size() != s.params.size() + 1)
      throw std::runtime_error(fmt::format("{}: results[{}] must be [one value index per parameter ({}), time or null]",
                                           file, row, s.params.size()));
    cotune::config c{};
    std::size_t d = 0;
    double time = std::numeric_limits<double>::infinity();
    for (dom::element cell : cells) {
      if (d == s.params.size()) {
        if (!cell.is_null() && (cell.get(time) || !(time > 0)))
          throw std::runtime_error(fmt::format("{}: results[{}]: the time must be a positive number or null", file, row));
        break;
      }
      std::uint64_t k = 0;
      if (cell.get(k) || k >= s.params[d].values.size())
        throw std::runtime_error(fmt::format("{}: results[{}]: index for {} must be below {}", file, row, s.params[d].name,
                                             s.params[d].values.size()));
      c.set(s.params[d].name, s.params[d].values[k]);
      ++d;
    }
    s.configs.push_back(std::move(c));
    s.truth.push_back(time);
    ++row;
  }
  return s;
}

/// Every *.json under `dir`, sorted by file name.
inline std::vector<std::filesystem::path> suite_files(const std::filesystem::path& dir) {
  std::vector<std::filesystem::path> out;
  for (const auto& e : std::filesystem::directory_iterator(dir))
    if (e.is_regular_file() && e.path().extension() == ".json") out.push_back(e.path());
  std::sort(out.begin(), out.end());
  return out;
}

} // namespace cotune_bench
