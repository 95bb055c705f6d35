#pragma once
/// \file The bodies of batch/job_spec.hpp (compiled once with COTUNE_SEPARATE_COMPILATION, see
/// detail/config.hpp), and the job file reader: simdjson's DOM read field by field, every refusal located
/// (json_location.hpp) and worded as the README's "Tuning as a job" section documents the schema.

#include <algorithm>
#include <map>
#include <set>

#include <fmt/core.h>
#include <simdjson.h>

#include <cotune/detail/files.hpp>
#include <cotune/detail/hashing.hpp>
#include <cotune/detail/json.hpp>
#include <cotune/batch/input_limits.hpp>
#include <cotune/batch/job_spec.hpp>
#include <cotune/batch/json_location.hpp>
#include <cotune/search/search_knobs.hpp>
#include <cotune/search/search_registry.hpp>

namespace cotune::batch {

COTUNE_DECL std::vector<config> kernel_job::configs() const {
  std::vector<config> out{config{}};
  for (const auto& [axis, values] : axes) {
    std::vector<config> next;
    for (const auto& c : out)
      for (const auto& v : values) {
        config x = c;
        if (!is_launch_option(axis)) x.set(axis, v);
        else {
          // An axis named as a launch option sets it (read_space checked its values are integers).
          launch_options lo = x.launch();
          set_launch_option(lo, axis, static_cast<int>(v.as_int()));
          x.with_launch(lo);
        }
        next.push_back(std::move(x));
      }
    out = std::move(next);
  }
  for (auto& c : out) derive_launch(c, launch, geometry ? &*geometry : nullptr);
  return out;
}

COTUNE_DECL std::uint64_t kernel_job::config_count() const noexcept {
  std::uint64_t n = 1;
  for (const auto& [axis, values] : axes) n = saturating_product(n, values.size());
  return n;
}

COTUNE_DECL std::vector<config> kernel_job::candidates(const instance& inst,
                                                      const std::vector<config>& all) const {
  std::vector<config> out;
  for (const auto& c : all) {
    bool keep = true;
    for (const auto& [e, where] : constraints) {
      try {
        keep = e.evaluate([&](std::string_view n) {
                 // A host kernel never sees launch options: there they name nothing.
                 if (auto v = config_variable(c, n, backend != "host")) return v;
                 return inst.find(n);
               }) != 0;
      } catch (const expression_error& x) {
        throw job_error(
            fmt::format(COTUNE_FMT("{}: {} (config {{{}}}, instance {}); constraints may use the integer axes and "
                                   "the instances' variables"),
                        where, x.what(), c.text(), inst.text()));
      }
      if (!keep) break;
    }
    if (keep) out.push_back(c);
  }
  return out;
}

COTUNE_DECL std::vector<argument> kernel_job::arguments_for(const instance& inst) const {
  std::vector<argument> out;
  auto vars = [&](std::string_view n) { return inst.find(n); };
  for (const auto& t : arguments) {
    argument a;
    a.name = t.name;
    a.buffer = t.buffer;
    a.type = t.type;
    a.fill = t.fill;
    a.seed = t.seed;
    a.file = t.file;
    a.key = t.key;
    a.reset = t.reset;
    a.restore = t.restore;
    try {
      if (t.buffer) {
        const std::int64_t n = t.extent->evaluate(vars);
        // 2^34 elements (64 GiB of float32): beyond any buffer a job should allocate on the host.
        if (n < 1 || n > (std::int64_t{1} << 34))
          throw job_error(fmt::format(COTUNE_FMT("{}: extent '{}' is {} for instance {}; it must be in [1, 2^34]"),
                                      t.where, t.extent->text(), n, inst.text()));
        a.extent = static_cast<std::size_t>(n);
      } else if (t.int_value) {
        a.scalar = value(t.int_value->evaluate(vars));
      } else {
        a.scalar = value(*t.float_value);
      }
    } catch (const expression_error& e) {
      throw job_error(fmt::format(COTUNE_FMT("{}: {} for instance {} ({}); define the variable in every instance"),
                                  t.where, e.what(), inst.text(), inst.where));
    }
    out.push_back(std::move(a));
  }
  return out;
}

COTUNE_DECL launch_grid kernel_job::grid_for(const config& c, const instance& inst) const {
  if (!geometry) return {};
  try {
    return geometry->evaluate(c, [&](std::string_view n) { return inst.find(n); });
  } catch (const job_error&) {
    throw;
  } catch (const error& e) {
    throw job_error(fmt::format(COTUNE_FMT("{} (instance {})"), e.what(), inst.text()));
  }
}

struct job_spec::reader {
  std::string_view text;
  std::string origin;
  std::filesystem::path base;
  simdjson::dom::parser parser{};
  std::uint64_t expanded = 0; ///< (config, instance) pairs of the kernels read so far
  json_locator locator{text};

  [[nodiscard]] std::string at(const json_path& p) {
    const auto loc = locator(p);
    return fmt::format(COTUNE_FMT("{}:{}:{}: {}"), origin, loc.line, loc.column, p.text());
  }
  [[noreturn]] void fail(const json_path& p, std::string_view why) {
    throw job_error(fmt::format(COTUNE_FMT("{}: {}"), at(p), why));
  }

  simdjson::dom::object object(simdjson::dom::element e, const json_path& p, std::set<std::string_view> known) {
    simdjson::dom::object o;
    if (e.get_object().get(o) != simdjson::SUCCESS) fail(p, "expected an object");
    for (auto [k, v] : o)
      if (!known.contains(k)) {
        std::string list;
        for (auto n : known) list += (list.empty() ? "" : ", ") + std::string(n);
        fail(p / k, fmt::format(COTUNE_FMT("unknown field '{}'; the fields here are: {}"), k, list));
      }
    unique_keys(o, p);
    return o;
  }
  /// JSON leaves a key given twice in one object to the reader; a job file does not: which of two
  /// "backend"s or two axes of one name was meant is not for cotune to guess.
  void unique_keys(simdjson::dom::object o, const json_path& p) {
    if (auto k = repeated_key(o)) fail(p, fmt::format(COTUNE_FMT("'{}' is given twice in this object; keep one"), *k));
  }
  std::optional<simdjson::dom::element> field(simdjson::dom::object o, std::string_view k) {
    simdjson::dom::element e;
    if (o[k].get(e) != simdjson::SUCCESS) return std::nullopt;
    return e;
  }
  simdjson::dom::element required(simdjson::dom::object o, const json_path& p, std::string_view k,
                                  std::string_view what) {
    auto e = field(o, k);
    if (!e) fail(p, fmt::format(COTUNE_FMT("missing field '{}' ({})"), k, what));
    return *e;
  }
  /// A string of at most `limit` bytes (a name, an option, a path, a value: max_text_bytes; the inline
  /// code: the file's own limit).
  std::string string(simdjson::dom::element e, const json_path& p, std::size_t limit = max_text_bytes) {
    std::string_view s;
    if (e.get_string().get(s) != simdjson::SUCCESS) fail(p, "expected a string");
    if (s.size() > limit)
      fail(p, fmt::format(COTUNE_FMT("a string of {} bytes, more than the {} allowed here"), s.size(), limit));
    return std::string(s);
  }
  /// A list of at most `limit` entries.
  simdjson::dom::array bounded(simdjson::dom::array a, const json_path& p, std::size_t limit, std::string_view what) {
    if (const auto n = element_count(a); n > limit)
      fail(p, fmt::format(COTUNE_FMT("{} {}, more than the {} a job file may list here"), count_text(n), what, limit));
    return a;
  }
  bool boolean(simdjson::dom::element e, const json_path& p) {
    bool b = false;
    if (e.get_bool().get(b) != simdjson::SUCCESS) fail(p, "expected true or false");
    return b;
  }
  double number(simdjson::dom::element e, const json_path& p) {
    double d = 0;
    if (e.is_int64()) return static_cast<double>(std::int64_t(e));
    if (e.get_double().get(d) != simdjson::SUCCESS) fail(p, "expected a number");
    return d;
  }
  /// An integer expression: a JSON integer, or a string holding an expression.
  expression expr(simdjson::dom::element e, const json_path& p) {
    std::int64_t n = 0;
    if (e.get_int64().get(n) == simdjson::SUCCESS) return expression::constant(n);
    std::string_view s;
    if (e.get_string().get(s) != simdjson::SUCCESS)
      fail(p, "expected an integer or an expression in a string (\"M * K\")");
    try {
      return expression::parse(s);
    } catch (const expression_error& x) {
      fail(p, x.what());
    }
  }

  job_spec read() {
    simdjson::dom::element root;
    const json_path top;
    if (auto err = parser.parse(text.data(), text.size()).get(root); err != simdjson::SUCCESS) {
      if (auto at = cotune::detail::find_json_syntax_error(text))
        throw job_error(
            fmt::format(COTUNE_FMT("{}:{}:{}: not valid JSON: {}"), origin, at->line, at->column, at->what));
      // The grammar holds: a number out of range, say.
      throw job_error(fmt::format(COTUNE_FMT("{}: not valid JSON ({})"), origin, simdjson::error_message(err)));
    }
    auto o = object(root, top, {"name", "bench", "search", "kernels"});
    job_spec job;
    job.path = origin;
    if (auto n = field(o, "name")) job.name = string(*n, top / "name");
    else job.name = std::filesystem::path(origin).stem().string();
    if (auto b = field(o, "bench")) {
      const auto bp = top / "bench";
      auto bo = object(*b, bp, {"warmup_ms", "rep_ms"});
      auto positive = [&](std::string_view k) -> std::optional<double> {
        auto e = field(bo, k);
        if (!e) return std::nullopt;
        const double v = number(*e, bp / k);
        if (!(v > 0)) fail(bp / k, "must be a positive number of milliseconds");
        return v;
      };
      job.warmup_ms = positive("warmup_ms");
      job.rep_ms = positive("rep_ms");
    }
    if (auto s = field(o, "search")) read_search(*s, top / "search", job);
    simdjson::dom::array ks;
    const auto kp = top / "kernels";
    if (required(o, top, "kernels", "a list of kernels to tune").get_array().get(ks) != simdjson::SUCCESS)
      fail(kp, "expected a list of kernels");
    if (ks.size() == 0) fail(kp, "the job lists no kernels");
    std::size_t i = 0;
    std::set<std::string> names;
    for (auto k : ks) {
      job.kernels.push_back(read_kernel(k, kp[i]));
      if (!names.insert(job.kernels.back().name()).second)
        fail(kp[i] / "name", fmt::format(COTUNE_FMT("a second kernel named '{}'; give each kernel its own name"),
                                         job.kernels.back().name()));
      ++i;
    }
    return job;
  }

  kernel_job read_kernel(simdjson::dom::element e, const json_path& p) {
    auto o = object(e, p, {"name", "backend", "source", "code", "entry", "options", "include_dirs", "space",
                           "geometry", "arguments", "key", "instances"});
    kernel_job k;
    k.where = at(p);
    const std::string name = string(required(o, p, "name", "a C identifier naming the kernel"), p / "name");
    if (auto why = kernel_name_problem(name); !why.empty()) fail(p / "name", why);
    k.source.name = name;
    if (auto b = field(o, "backend")) {
      k.backend = string(*b, p / "backend");
      if (k.backend != "host" && k.backend != "cuda" && k.backend != "hip")
        fail(p / "backend", fmt::format(COTUNE_FMT("unknown backend '{}'; use host, cuda or hip"), k.backend));
    }
    k.entry = name;
    if (auto en = field(o, "entry")) k.entry = string(*en, p / "entry");
    // A GPU kernel's entry may be a name expression (`scale<ITEMS>`), which NVRTC and hiprtc instantiate.
    const std::string_view entry_name = std::string_view(k.entry).substr(0, k.backend == "host" ? k.entry.size() : k.entry.find('<'));
    if (!is_identifier(entry_name) || (entry_name.size() < k.entry.size() && !k.entry.ends_with('>')))
      fail(p / "entry",
           k.backend == "host"
               ? fmt::format(COTUNE_FMT("'{}' is not a C identifier (the kernel's extern \"C\" function)"), k.entry)
               : fmt::format(COTUNE_FMT("'{}' is neither a C identifier nor a name expression such as 'scale<ITEMS>'"),
                             k.entry));
    auto src = field(o, "source");
    auto code = field(o, "code");
    if (src && code) fail(p / "code", "give either 'source' (a file) or 'code' (inline), not both");
    if (src) {
      k.source_file = string(*src, p / "source");
      std::filesystem::path f = k.source_file;
      if (f.is_relative()) f = base / f;
      auto t = cotune::detail::read_file(f);
      if (!t)
        fail(p / "source", fmt::format(COTUNE_FMT("cannot read '{}'; paths are relative to the job file"), f.string()));
      k.source.code = *t;
    } else if (code) {
      k.source.code = string(*code, p / "code", std::numeric_limits<std::size_t>::max());
    } else {
      fail(p, "missing field 'source' (a file) or 'code' (the kernel's source inline)");
    }
    if (auto opts = field(o, "options")) {
      simdjson::dom::array a;
      if (opts->get_array().get(a) != simdjson::SUCCESS) fail(p / "options", "expected a list of compiler options");
      a = bounded(a, p / "options", max_list_entries, "options");
      std::size_t j = 0;
      for (auto x : a) k.source.options.push_back(string(x, (p / "options")[j++]));
    }
    if (auto inc = field(o, "include_dirs")) {
      simdjson::dom::array a;
      if (inc->get_array().get(a) != simdjson::SUCCESS) fail(p / "include_dirs", "expected a list of directories");
      a = bounded(a, p / "include_dirs", max_list_entries, "include directories");
      std::size_t j = 0;
      for (auto x : a) {
        std::filesystem::path d = string(x, (p / "include_dirs")[j++]);
        k.source.include_dirs.push_back((d.is_relative() ? base / d : d).string());
      }
    }
    if (auto s = field(o, "space")) read_space(*s, p / "space", k);
    if (auto g = field(o, "geometry")) {
      if (k.backend == "host")
        fail(p / "geometry", "a host kernel has no launch geometry (it is called once per run); remove 'geometry' "
                             "or set \"backend\": \"cuda\"");
      k.geometry = read_geometry(*g, p / "geometry");
    } else if (k.backend != "host") {
      fail(p, fmt::format(COTUNE_FMT("missing field 'geometry' (a {} kernel's launch grid: \"geometry\": {{\"grid\": "
                                     "[\"cdiv(n, BLOCK)\"]}})"),
                          k.backend));
    }
    read_arguments(required(o, p, "arguments", "the kernel's arguments, in order"), p / "arguments", k);
    if (auto key = field(o, "key")) {
      simdjson::dom::array a;
      if (key->get_array().get(a) != simdjson::SUCCESS) fail(p / "key", "expected a list of argument names");
      a = bounded(a, p / "key", max_list_entries, "key arguments");
      std::size_t j = 0;
      for (auto x : a) {
        const auto kp = (p / "key")[j++];
        const std::string n = string(x, kp);
        bool found = false;
        for (auto& t : k.arguments)
          if (t.name == n) found = t.key = true;
        if (!found) fail(kp, fmt::format(COTUNE_FMT("'{}' is not an argument of kernel '{}'"), n, name));
      }
    }
    read_instances(required(o, p, "instances", "the problem instances to tune"), p / "instances", k);
    if (k.backend == "host") {
      k.source.code += host_trampoline(k.entry, k.arguments_for(k.instances.front()));
      k.source.entry = std::string(job_entry_name);
    } else {
      k.source.entry = k.entry; // a GPU kernel takes its parameters straight from the launch
    }
    // Checked now, so that a dry run finds what a real run would: every instance's arguments and
    // candidates, and no two instances with one key. read_instances bounded the work.
    const auto all = k.configs();
    std::map<std::string, std::size_t> keys;
    for (std::size_t j = 0; j < k.instances.size(); ++j) {
      const auto& inst = k.instances[j];
      const auto text = key_text(k.arguments_for(inst));
      if (auto [it, fresh] = keys.emplace(text, j); !fresh)
        fail((p / "instances")[j],
             fmt::format(COTUNE_FMT("instances {} and {} have the same tuning key ({}); list each "
                                    "problem once, or add the argument that tells them apart to 'key'"),
                         it->second, j, text));
      const auto cands = k.candidates(inst, all);
      if (cands.empty())
        fail((p / "instances")[j],
             fmt::format(COTUNE_FMT("the constraints leave no config for instance {}"), inst.text()));
      for (const auto& c : cands) (void)k.grid_for(c, inst);
    }
    return k;
  }

  /// "search": {"strategy": "bayes-local", "budget": "25%" or 64, "seed": 1}, each field optional.
  void read_search(simdjson::dom::element e, const json_path& p, job_spec& job) {
    auto o = object(e, p, {"strategy", "budget", "seed"});
    if (auto s = field(o, "strategy")) {
      job.search = string(*s, p / "strategy");
      if (!search_registry::instance().contains(*job.search)) {
        std::string names;
        for (const auto& n : search_registry::instance().names()) names += (names.empty() ? "" : ", ") + n;
        fail(p / "strategy", fmt::format(COTUNE_FMT("'{}' is not a registered search strategy; the strategies are: {}"),
                                         *job.search, names));
      }
    }
    search_settings budget;
    if (auto b = field(o, "budget")) {
      std::uint64_t n = 0;
      std::string_view text;
      if (b->get_uint64().get(n) == simdjson::SUCCESS) budget.evaluations = static_cast<std::size_t>(n);
      else if (b->get_string().get(text) == simdjson::SUCCESS && text.ends_with('%')) {
        try {
          budget.fraction = cotune::detail::search_budget_of(std::string(text)).fraction;
        } catch (const knob_error&) {
          fail(p / "budget",
               fmt::format(COTUNE_FMT("'{}' is no share of the candidates; give a percentage above 0% and at most "
                                      "100% (\"25%\")"),
                           text));
        }
      } else fail(p / "budget", "expected a count of candidates (64) or a share of them (\"25%\")");
    }
    if (auto s = field(o, "seed")) {
      std::uint64_t n = 0;
      if (s->get_uint64().get(n) != simdjson::SUCCESS) fail(p / "seed", "expected a non-negative integer");
      budget.seed = n;
    }
    if (field(o, "budget") || field(o, "seed")) job.search_budget = budget;
  }

  void read_space(simdjson::dom::element e, const json_path& p, kernel_job& k) {
    auto o = object(e, p, {"axes", "categorical", "constraints", "launch"});
    if (auto axes = field(o, "axes")) {
      simdjson::dom::object ao;
      if (axes->get_object().get(ao) != simdjson::SUCCESS)
        fail(p / "axes", "expected an object of axes ({\"BLOCK\": [16, 32, 64]})");
      unique_keys(ao, p / "axes");
      if (ao.size() > max_axes)
        fail(p / "axes", fmt::format(COTUNE_FMT("{} axes, more than the {} a space may have"), ao.size(), max_axes));
      for (auto [name, vals] : ao) {
        const auto ap = p / "axes" / name;
        if (!is_identifier(name)) fail(ap, fmt::format(COTUNE_FMT("axis name '{}' is not a C identifier"), name));
        simdjson::dom::array a;
        if (vals.get_array().get(a) != simdjson::SUCCESS || a.size() == 0)
          fail(ap, "expected a non-empty list of values (integers, numbers, strings or booleans)");
        std::vector<value> values;
        std::size_t j = 0;
        if (is_launch_option(name) && k.backend == "host")
          fail(ap,
               fmt::format(COTUNE_FMT("'{}' is a launch option, which a host kernel does not see; rename the axis (a "
                                      "macro) or set \"backend\": \"cuda\""),
                           name));
        for (auto v : a) {
          if (is_launch_option(name) && (!v.is_int64() || std::int64_t(v) < 1 || std::int64_t(v) > max_launch_option))
            fail(ap[j],
                 fmt::format(COTUNE_FMT("launch option '{}' takes integers in [1, {}]"), name, max_launch_option));
          if (v.is_bool()) values.emplace_back(bool(v));
          else if (v.is_int64()) values.emplace_back(std::int64_t(v));
          else if (v.is_double()) values.emplace_back(double(v));
          else if (v.is_string())
            values.emplace_back(string(v, ap[j]));
          else fail(ap[j], "expected an integer, a number, a string or a boolean");
          ++j;
        }
        k.axes.emplace_back(std::string(name), std::move(values));
      }
      if (const auto n = k.config_count(); n > max_candidates()) {
        std::string product;
        for (const auto& [axis, values] : k.axes)
          product += fmt::format(COTUNE_FMT("{}{} {}"), product.empty() ? "" : " x ", axis, values.size());
        fail(p / "axes",
             fmt::format(COTUNE_FMT("the axes' product ({}) is {} configs, more than the limit of {} (config, "
                                    "instance) pairs ({}); give the axes fewer values, or raise the limit"),
                         product, count_text(n), max_candidates(), max_candidates_knob));
      }
    }
    if (auto cat = field(o, "categorical")) { // numeric axes whose values are unrelated choices
      simdjson::dom::array a;
      if (cat->get_array().get(a) != simdjson::SUCCESS)
        fail(p / "categorical", "expected a list of axis names ([\"METHOD\"])");
      a = bounded(a, p / "categorical", max_list_entries, "categorical axes");
      std::size_t j = 0;
      for (auto n : a) {
        const auto np = (p / "categorical")[j++];
        std::string_view name;
        if (n.get_string().get(name) != simdjson::SUCCESS) fail(np, "expected an axis name (a string)");
        if (std::none_of(k.axes.begin(), k.axes.end(), [&](const auto& ax) { return ax.first == name; }))
          fail(np, fmt::format(COTUNE_FMT("'{}' is not an axis of this space; name one of its \"axes\""), name));
        k.kinds[(is_launch_option(name) ? "launch." : "") + std::string(name)] = param_kind::categorical;
      }
    }
    if (auto cs = field(o, "constraints")) {
      simdjson::dom::array a;
      if (cs->get_array().get(a) != simdjson::SUCCESS)
        fail(p / "constraints", "expected a list of expressions (\"BLOCK_M * BLOCK_K <= 8192\")");
      a = bounded(a, p / "constraints", max_list_entries, "constraints");
      std::size_t j = 0;
      for (auto c : a) {
        const auto cp = (p / "constraints")[j++];
        k.constraints.emplace_back(expr(c, cp), at(cp));
      }
    }
    if (auto l = field(o, "launch")) {
      auto lo = object(*l, p / "launch", {"num_warps", "num_stages", "num_ctas", "maxnreg", "threads_per_block"});
      for (auto [name, v] : lo) k.launch.push_back({std::string(name), expr(v, p / "launch" / name), at(p / "launch" / name)});
    }
  }

  /// A kernel's `geometry`: `grid` (required) and `block` are an expression or a list of 1 to 3,
  /// `shared_bytes` one.
  launch_geometry read_geometry(simdjson::dom::element e, const json_path& p) {
    auto o = object(e, p, {"grid", "block", "shared_bytes"});
    launch_geometry g;
    auto dims = [&](simdjson::dom::element d, const json_path& dp) {
      std::vector<expression> out;
      simdjson::dom::array a;
      if (d.get_array().get(a) != simdjson::SUCCESS) {
        out.push_back(expr(d, dp));
        return out;
      }
      if (a.size() < 1 || a.size() > 3)
        fail(dp, fmt::format(COTUNE_FMT("expected 1 to 3 dimensions (x, y, z), got {}"), a.size()));
      std::size_t j = 0;
      for (auto x : a) {
        out.push_back(expr(x, dp[j]));
        ++j;
      }
      return out;
    };
    g.grid = dims(required(o, p, "grid", "the number of blocks: an expression, or a list of up to 3 (x, y, z), "
                                         "e.g. [\"cdiv(N, BLOCK_N)\", \"cdiv(M, BLOCK_M)\"]"),
                  p / "grid");
    g.grid_where = at(p / "grid");
    if (auto b = field(o, "block")) {
      g.block = dims(*b, p / "block");
      g.block_where = at(p / "block");
    }
    if (auto sb = field(o, "shared_bytes")) {
      g.shared_bytes = expr(*sb, p / "shared_bytes");
      g.shared_where = at(p / "shared_bytes");
    }
    return g;
  }

  void read_arguments(simdjson::dom::element e, const json_path& p, kernel_job& k) {
    simdjson::dom::array a;
    if (e.get_array().get(a) != simdjson::SUCCESS || a.size() == 0)
      fail(p, "expected a non-empty list of arguments");
    a = bounded(a, p, max_list_entries, "arguments");
    std::size_t j = 0;
    std::set<std::string> names;
    for (auto x : a) {
      const auto ap = p[j++];
      auto o = object(x, ap, {"name", "buffer", "scalar", "extent", "fill", "seed", "file", "value", "reset",
                              "restore"});
      argument_template t;
      t.where = at(ap);
      t.name = string(required(o, ap, "name", "the argument's name, as in the kernel"), ap / "name");
      if (!is_identifier(t.name)) fail(ap / "name", fmt::format(COTUNE_FMT("'{}' is not a C identifier"), t.name));
      if (!names.insert(t.name).second)
        fail(ap / "name", fmt::format(COTUNE_FMT("a second argument named '{}'"), t.name));
      auto buf = field(o, "buffer");
      auto sc = field(o, "scalar");
      if (bool(buf) == bool(sc))
        fail(ap, "give exactly one of 'buffer' (its element type: \"buffer\": \"float32\") or 'scalar' (its type)");
      t.buffer = bool(buf);
      const auto tp = ap / (t.buffer ? "buffer" : "scalar");
      const std::string type = string(t.buffer ? *buf : *sc, tp);
      auto et = element_type_from(type);
      if (!et) {
        std::string list;
        for (auto x2 : all_element_types) list += (list.empty() ? "" : ", ") + std::string(to_string(x2));
        fail(tp, fmt::format(COTUNE_FMT("unknown element type '{}'; use one of {}"), type, list));
      }
      t.type = *et;
      if (!t.buffer && t.type == element_type::float16)
        fail(tp, "float16 is for buffers; give a scalar as float32 or float64");
      auto refuse = [&](std::string_view f, std::string_view why) {
        if (field(o, f)) fail(ap / f, why);
      };
      if (t.buffer) {
        refuse("value", "a buffer has no 'value'; fill it with 'fill'");
        t.extent = expr(required(o, ap, "extent", "the number of elements, e.g. \"M * K\""), ap / "extent");
        t.where = at(ap / "extent");
        std::string fill = "zeros";
        if (auto f = field(o, "fill")) fill = string(*f, ap / "fill");
        if (fill == "zeros") t.fill = fill_kind::zeros;
        else if (fill == "ones") t.fill = fill_kind::ones;
        else if (fill == "random") t.fill = fill_kind::random;
        else if (fill == "file") t.fill = fill_kind::file;
        else
          fail(ap / "fill",
               fmt::format(COTUNE_FMT("unknown fill '{}'; use zeros, ones, random (with 'seed') or file (with 'file')"),
                           fill));
        if (auto s = field(o, "seed")) {
          std::uint64_t seed = 0;
          if (s->get_uint64().get(seed) != simdjson::SUCCESS) fail(ap / "seed", "expected a non-negative integer");
          if (t.fill != fill_kind::random) fail(ap / "seed", "'seed' goes with \"fill\": \"random\"");
          t.seed = seed;
        }
        if (auto f = field(o, "file")) {
          if (t.fill != fill_kind::file) fail(ap / "file", "'file' goes with \"fill\": \"file\"");
          std::filesystem::path fp = string(*f, ap / "file");
          t.file = fp.is_relative() ? base / fp : fp;
        } else if (t.fill == fill_kind::file) {
          fail(ap, "\"fill\": \"file\" needs 'file' (raw little-endian elements, relative to the job file)");
        }
        if (auto r = field(o, "reset")) t.reset = boolean(*r, ap / "reset");
        if (auto r = field(o, "restore")) t.restore = boolean(*r, ap / "restore");
      } else {
        for (auto f : {"extent", "fill", "seed", "file", "reset", "restore"})
          refuse(f, "only buffers have this field; a scalar has 'value'");
        auto v = required(o, ap, "value", "the scalar's value: a number, or an expression over the instance's variables");
        t.where = at(ap / "value");
        if (is_floating(t.type) && (v.is_double() || v.is_int64())) t.float_value = number(v, ap / "value");
        else if (is_floating(t.type)) fail(ap / "value", "a floating scalar takes a number");
        else t.int_value = expr(v, ap / "value");
      }
      k.arguments.push_back(std::move(t));
    }
  }

  void read_instances(simdjson::dom::element e, const json_path& p, kernel_job& k) {
    auto one = [&](simdjson::dom::object o, const json_path& ip) {
      instance inst;
      inst.where = at(ip);
      unique_keys(o, ip);
      if (o.size() > max_instance_variables)
        fail(ip, fmt::format(COTUNE_FMT("{} variables, more than the {} an instance may have"), o.size(),
                             max_instance_variables));
      for (auto [name, v] : o) {
        if (!is_identifier(name))
          fail(ip / name, fmt::format(COTUNE_FMT("variable name '{}' is not a C identifier"), name));
        std::int64_t n = 0;
        if (v.get_int64().get(n) != simdjson::SUCCESS) fail(ip / name, "expected an integer");
        inst.vars.emplace_back(std::string(name), n);
      }
      return inst;
    };
    // Counted before any instance is built: with the configs, the (config, instance) pairs the job
    // expands to, which reading it (and tuning it) costs.
    simdjson::dom::array a;
    simdjson::dom::object o;
    const bool listed = e.get_array().get(a) == simdjson::SUCCESS;
    if (!listed && e.get_object().get(o) != simdjson::SUCCESS)
      fail(p, "expected a list of instances ([{\"n\": 1024}, ...]) or an object of value lists ({\"n\": [1024, 4096]})");
    std::uint64_t count = listed ? element_count(a) : 1;
    std::string shape;
    if (!listed) {
      unique_keys(o, p);
      if (o.size() > max_instance_variables)
        fail(p, fmt::format(COTUNE_FMT("{} variables, more than the {} an instance may have"), o.size(),
                            max_instance_variables));
      for (auto [name, vals] : o) {
        const auto vp = p / name;
        if (!is_identifier(name)) fail(vp, fmt::format(COTUNE_FMT("variable name '{}' is not a C identifier"), name));
        simdjson::dom::array va;
        if (vals.get_array().get(va) != simdjson::SUCCESS || va.size() == 0)
          fail(vp, "expected a non-empty list of integers");
        const auto n = element_count(va);
        count = saturating_product(count, n);
        shape += fmt::format(COTUNE_FMT("{}{} {}"), shape.empty() ? "(" : " x ", name, n);
      }
      if (!shape.empty()) shape += ") = ";
    }
    const std::uint64_t pairs = saturating_product(k.config_count(), count);
    if (saturating_sum(expanded, pairs) > max_candidates())
      fail(p, fmt::format(
                  COTUNE_FMT("kernel '{}' expands to {} configs x {}{} instances = {} (config, instance) pairs{}, more "
                             "than the limit of {} ({}); split the job, list fewer instances or axis values, or raise "
                             "the limit"),
                  k.name(), count_text(k.config_count()), shape, count_text(count), count_text(pairs),
                  expanded ? fmt::format(COTUNE_FMT(" (plus {} from the kernels before it)"), expanded) : std::string(),
                  max_candidates(), max_candidates_knob));
    expanded = saturating_sum(expanded, pairs);
    if (listed) {
      std::size_t j = 0;
      for (auto x : a) {
        const auto ip = p[j++];
        simdjson::dom::object io;
        if (x.get_object().get(io) != simdjson::SUCCESS) fail(ip, "expected an object of variables ({\"n\": 4096})");
        k.instances.push_back(one(io, ip));
      }
    } else {
      // The product of every variable's values, the last varying fastest.
      std::vector<instance> out{instance{{}, at(p)}};
      for (auto [name, vals] : o) {
        const auto vp = p / name;
        simdjson::dom::array va = vals.get_array().value_unsafe(); // checked above
        std::vector<instance> next;
        next.reserve(out.size() * va.size());
        for (const auto& inst : out) {
          std::size_t j = 0;
          for (auto v : va) {
            std::int64_t n = 0;
            if (v.get_int64().get(n) != simdjson::SUCCESS) fail(vp[j], "expected an integer");
            ++j;
            instance x = inst;
            x.vars.emplace_back(std::string(name), n);
            next.push_back(std::move(x));
          }
        }
        out = std::move(next);
      }
      k.instances = std::move(out);
    }
    if (k.instances.empty()) fail(p, "the kernel has no instances");
  }
};

COTUNE_DECL job_spec job_spec::load(const std::filesystem::path& file) {
  return parse(read_input_file<job_error>(file, "job file"), file);
}

COTUNE_DECL job_spec job_spec::parse(std::string_view text, const std::filesystem::path& origin) {
  if (auto why = input_size_problem(text.size()); !why.empty())
    throw job_error(fmt::format(COTUNE_FMT("{}: the job file has {}"), origin.string(), why));
  reader r{text, origin.string(), origin.parent_path()};
  return r.read();
}

COTUNE_DECL std::string job_spec::digest() const {
  cotune::detail::sha256_hasher h;
  h.field("cotune-job").field(name);
  for (const auto& k : kernels) h.field(k.source.digest());
  return cotune::detail::to_hex(h.digest());
}

COTUNE_DECL std::size_t job_spec::instance_count() const noexcept {
  std::size_t n = 0;
  for (const auto& k : kernels) n += k.instances.size();
  return n;
}

} // namespace cotune::batch
