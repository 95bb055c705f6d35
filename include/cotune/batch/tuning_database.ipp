#pragma once
/// \file The bodies of batch/tuning_database.hpp (compiled once with COTUNE_SEPARATE_COMPILATION, see
/// detail/config.hpp).

#include <algorithm>
#include <cmath>

#include <fmt/core.h>
#include <simdjson.h>

#include <cotune/detail/dir_fd.hpp>
#include <cotune/detail/json.hpp>
#include <cotune/batch/argument_pack.hpp>
#include <cotune/batch/input_limits.hpp>
#include <cotune/batch/tuning_database.hpp>

namespace cotune::batch {

namespace detail {
/// An entry's kernel, key and device as one text (NUL-separated; from_json refuses a NUL in them).
inline std::string id_text(const database_entry& e) {
  std::string out = e.kernel;
  out.append(1, '\0').append(e.key).append(1, '\0').append(e.device);
  return out;
}
} // namespace detail

COTUNE_DECL void tuning_database::add(database_entry e) {
  auto [at, fresh] = index_.try_emplace(detail::id_text(e), entries_.size());
  if (!fresh) entries_[at->second] = std::move(e);
  else entries_.push_back(std::move(e));
}

COTUNE_DECL void tuning_database::merge(const tuning_database& other) {
  for (const auto& e : other.entries_) add(e);
}

COTUNE_DECL const database_entry* tuning_database::find(std::string_view kernel, std::string_view key,
                                                        std::string_view device) const noexcept {
  for (const auto& e : entries_)
    if (e.kernel == kernel && e.key == key && (device.empty() || e.device == device)) return &e;
  return nullptr;
}

COTUNE_DECL database_entry database_entry::from(const tuning_result& r, std::string fingerprint,
                                         bool with_candidates) {
  database_entry e;
  e.kernel = r.kernel;
  e.key = instance_key_text(r.key_text);
  e.device = r.made.device;
  e.fingerprint = std::move(fingerprint);
  e.date = r.made.date;
  e.host = r.made.host;
  e.cotune_version = r.made.cotune_version;
  e.winner = r.best();
  e.time = r.candidates.at(r.winner).time;
  e.launch_options = r.launch_options;
  if (with_candidates) {
    e.detail = r;
    e.detail->key_text = e.key;
  }
  return e;
}

COTUNE_DECL std::string database_entry::problem() const {
  // The kernel first: it becomes a file name.
  if (auto why = kernel_name_problem(kernel); !why.empty()) return why + ", as a job file requires";
  auto sized = [](std::string_view k, std::string_view v) -> std::string {
    if (v.size() > max_text_bytes)
      return fmt::format(COTUNE_FMT("\"{}\" has {} bytes, more than {}"), k, v.size(), max_text_bytes);
    return {};
  };
  // What listings print a line of: a control character there (a newline) would forge another line.
  auto listed = [&](std::string_view k, std::string_view v) -> std::string {
    if (auto why = sized(k, v); !why.empty()) return why;
    return text_problem(fmt::format(COTUNE_FMT("\"{}\""), k), v);
  };
  // Elsewhere: UTF-8 (the file is JSON) without a NUL, which no writer puts in a string.
  auto other = [&](std::string_view k, std::string_view v) -> std::string {
    if (auto why = sized(k, v); !why.empty()) return why;
    if (v.find('\0') != std::string_view::npos) return fmt::format(COTUNE_FMT("\"{}\" holds a NUL character"), k);
    if (!cotune::detail::valid_utf8(v)) return fmt::format(COTUNE_FMT("\"{}\" holds bytes that are not UTF-8"), k);
    return {};
  };
  for (const auto& [k, v] :
       {std::pair<std::string_view, std::string_view>{"key", key}, {"device", device}, {"host", host}, {"date", date}})
    if (auto why = listed(k, v); !why.empty()) return why;
  for (const auto& [k, v] :
       {std::pair<std::string_view, std::string_view>{"fingerprint", fingerprint}, {"cotune", cotune_version}})
    if (auto why = other(k, v); !why.empty()) return why;
  // A config is listed whole (`db show`): its hook's name and string values are held as a key is, its
  // parameters and launch options to what a job file could make. A loser's config too: a failed
  // candidate had to be one a job could write.
  auto config_problem = [&](const config& c, std::string_view what) -> std::string {
    if (c.pre_hook())
      if (auto why = listed("pre_hook", c.pre_hook()->name); !why.empty())
        return fmt::format(COTUNE_FMT("{}: {}"), what, why);
    if (auto why = params_problem(c); !why.empty()) return fmt::format(COTUNE_FMT("{}: {}"), what, why);
    for (const auto& [name, v] : c.params())
      if (v.is_string())
        if (auto why = text_problem(fmt::format(COTUNE_FMT("parameter '{}'"), name), v.as_string()); !why.empty())
          return fmt::format(COTUNE_FMT("{}: {}"), what, why);
    if (auto why = launch_problem(c.launch()); !why.empty())
      return fmt::format(COTUNE_FMT("{} {{{}}}: {}"), what, c.text(), why);
    return {};
  };
  if (auto why = config_problem(winner, "the winner"); !why.empty()) return why;
  if (auto why = time_problem(time); !why.empty()) return fmt::format(COTUNE_FMT("\"time_ms\": {}"), why);
  if (!detail) return {};
  if (detail->candidates.size() > max_candidates())
    return fmt::format(COTUNE_FMT("\"result\" lists {} candidates, more than the limit of {} ({})"),
                       detail->candidates.size(), max_candidates(), max_candidates_knob);
  if (auto why = kernel_name_problem(detail->kernel); !why.empty())
    return fmt::format(COTUNE_FMT("\"result\": {}"), why);
  for (const auto& [k, v] : {std::pair<std::string_view, std::string_view>{"key", detail->key_text},
                             {"device", detail->made.device},
                             {"host", detail->made.host},
                             {"date", detail->made.date}})
    if (auto why = listed(k, v); !why.empty()) return fmt::format(COTUNE_FMT("\"result\": {}"), why);
  if (auto why = other("cotune", detail->made.cotune_version); !why.empty())
    return fmt::format(COTUNE_FMT("\"result\": {}"), why);
  for (std::size_t j = 0; j < detail->candidates.size(); ++j) {
    const auto& cand = detail->candidates[j];
    const auto what = fmt::format(COTUNE_FMT("\"result\" candidate {}"), j);
    if (auto why = config_problem(cand.cfg, what); !why.empty()) return why;
    for (const auto& [k, v] :
         {std::pair<std::string_view, std::string_view>{"reason", cand.reason}, {"method", cand.method}})
      if (auto why = other(k, v); !why.empty()) return fmt::format(COTUNE_FMT("{}: {}"), what, why);
    if (cand.status == candidate_status::ok)
      if (auto why = time_problem(cand.time); !why.empty()) return fmt::format(COTUNE_FMT("{}: {}"), what, why);
  }
  return {};
}

COTUNE_DECL std::string tuning_database::json(std::string_view secret) const {
  auto sorted = entries_;
  std::sort(sorted.begin(), sorted.end(), [](const auto& a, const auto& b) { return a.id() < b.id(); });
  json_writer w;
  w.begin_object().field("format", format_name).field("version", format_version);
  w.field("cotune", version).field("entries_count", sorted.size());
  const std::string digest = digest_of(sorted);
  w.field("sha256", digest);
  if (!secret.empty()) w.field("hmac_sha256", cotune::detail::hmac_sha256_hex(secret, digest));
  w.key("entries").begin_array();
  for (const auto& e : sorted) {
    w.begin_object().field("kernel", e.kernel).field("key", e.key).field("device", e.device);
    w.field("fingerprint", e.fingerprint).field("date", e.date).field("host", e.host);
    w.field("cotune", e.cotune_version).key("winner").raw(e.winner.json());
    w.key("time_ms").begin_array().value(e.time[0]).value(e.time[1]).value(e.time[2]).end_array();
    if (!e.launch_options) w.field("launch_options", false);
    if (e.detail) w.key("result").raw(e.detail->json());
    w.end_object();
  }
  return std::move(w.end_array().end_object()).take() + "\n";
}

COTUNE_DECL tuning_database tuning_database::from_json(std::string_view text, std::string_view secret,
                                               const std::string& origin) {
  using namespace simdjson;
  if (auto why = input_size_problem(text.size()); !why.empty())
    throw database_error(fmt::format(COTUNE_FMT("{}: the tuning database has {}"), origin, why));
  dom::parser parser;
  dom::object root;
  const std::string normal = cotune::detail::normalize_nonfinite(text);
  if (auto err = parser.parse(normal).get(root); err != SUCCESS) {
    if (auto at = cotune::detail::find_json_syntax_error(text, true))
      throw database_error(fmt::format(COTUNE_FMT("{}:{}:{}: not a tuning database (not valid JSON: {})"), origin,
                                       at->line, at->column, at->what));
    throw database_error(fmt::format(COTUNE_FMT("{}: not a tuning database (not valid JSON: {})"), origin,
                                     simdjson::error_message(err)));
  }
  std::string_view sv;
  if (root["format"].get_string().get(sv) != SUCCESS || sv != format_name)
    throw database_error(
        fmt::format(COTUNE_FMT("{}: not a tuning database (its \"format\" is not \"{}\"; write one with "
                               "`cotune db export`)"),
                    origin, format_name));
  std::int64_t v = 0;
  if (root["version"].get_int64().get(v) != SUCCESS || v != format_version)
    throw database_error(fmt::format(COTUNE_FMT("{}: database format version {} is not {}, the one this cotune reads; "
                                                "export it again with this cotune"),
                                     origin, v, format_version));
  tuning_database db;
  dom::array list;
  if (root["entries"].get_array().get(list) != SUCCESS)
    throw database_error(fmt::format(COTUNE_FMT("{}: the database has no \"entries\" list"), origin));
  if (const auto n = element_count(list); n > max_candidates())
    throw database_error(
        fmt::format(COTUNE_FMT("{}: the database has {} entries, more than the limit of {} ({}); is this the "
                               "file you meant? If it is, raise the limit"),
                    origin, n, max_candidates(), max_candidates_knob));
  std::size_t i = 0;
  for (auto item : list) {
    auto fail = [&](std::string_view why) {
      return database_error(fmt::format(COTUNE_FMT("{}: entries[{}]: {}"), origin, i, why));
    };
    dom::object o;
    if (item.get_object().get(o) != SUCCESS) throw fail("expected an object");
    database_entry e;
    auto str = [&](const char* k, std::string& out, bool required) {
      if (o[k].get_string().get(sv) == SUCCESS) out = sv;
      else if (required)
        throw fail(fmt::format(COTUNE_FMT("missing string \"{}\""), k));
    };
    str("kernel", e.kernel, true);
    str("key", e.key, true);
    str("device", e.device, true);
    str("fingerprint", e.fingerprint, false);
    str("date", e.date, false);
    str("host", e.host, false);
    str("cotune", e.cotune_version, false);
    dom::element w;
    if (o["winner"].get(w) != SUCCESS) throw fail("missing \"winner\"");
    try {
      e.winner = config::from_json(w);
    } catch (const error& x) {
      throw fail(x.what());
    }
    dom::array t;
    if (o["time_ms"].get_array().get(t) != SUCCESS || t.size() != 3) throw fail("\"time_ms\" must hold 3 numbers");
    std::size_t j = 0;
    for (auto x : t)
      if (!cotune::detail::json_read_timing(x, e.time[j++])) throw fail("\"time_ms\" must hold 3 numbers");
    bool launch = true;
    if (o["launch_options"].get_bool().get(launch) == SUCCESS) e.launch_options = launch;
    dom::element r;
    if (o["result"].get(r) == SUCCESS) {
      dom::array cands;
      // Counted before the result is parsed: a forged count costs nothing.
      if (r["candidates"].get_array().get(cands) == SUCCESS && element_count(cands) > max_candidates())
        throw fail(fmt::format(COTUNE_FMT("\"result\" lists {} candidates, more than the limit of {} ({})"),
                               element_count(cands), max_candidates(), max_candidates_knob));
      auto parsed = tuning_result::from_json(simdjson::to_string(r));
      if (!parsed) throw fail("\"result\" is not a readable tuning result");
      e.detail = std::move(parsed);
    }
    if (auto why = e.problem(); !why.empty())
      throw fail(fmt::format(COTUNE_FMT("{}; is the database damaged or forged?"), why));
    db.index_.try_emplace(detail::id_text(e), db.entries_.size()); // the first of equal ids, as find() sees it
    db.entries_.push_back(std::move(e));
    ++i;
  }
  const std::string digest = digest_of(db.entries_);
  if (root["sha256"].get_string().get(sv) != SUCCESS || sv != digest)
    throw database_error(fmt::format(COTUNE_FMT("{}: the database's checksum does not match its entries (edited or "
                                                "damaged); export it again"),
                                     origin));
  std::string_view mac;
  db.signed_ = root["hmac_sha256"].get_string().get(mac) == SUCCESS;
  if (!secret.empty()) {
    if (!db.signed_)
      throw database_error(fmt::format(COTUNE_FMT("{}: the database is not signed, and a secret is set "
                                                  "(COTUNE_TUNING_DB_SECRET): export it with that secret, or unset it"),
                                       origin));
    if (!cotune::detail::constant_time_equal(mac, cotune::detail::hmac_sha256_hex(secret, digest)))
      throw database_error(
          fmt::format(COTUNE_FMT("{}: the database's signature does not match the secret "
                                 "(COTUNE_TUNING_DB_SECRET): it was signed with another secret, or altered"),
                      origin));
  }
  return db;
}

COTUNE_DECL tuning_database tuning_database::load(const std::filesystem::path& file, std::string_view secret) {
  return from_json(read_input_file<database_error>(file, "tuning database"), secret, file.string());
}

COTUNE_DECL void tuning_database::save(const std::filesystem::path& file, std::string_view secret) const {
  for (const auto& e : entries_)
    if (auto why = e.problem(); !why.empty())
      throw database_error(fmt::format(COTUNE_FMT("cannot save the tuning database to {}: the entry of kernel '{}', "
                                                  "key '{}' on '{}' is one no reader accepts: {}"),
                                       file.string(), shown_text(e.kernel), shown_text(e.key, 200),
                                       shown_text(e.device, 200), why));
  cotune::detail::atomic_write(file, json(secret));
}

COTUNE_DECL std::string tuning_database::digest_of(const std::vector<database_entry>& entries) {
  auto sorted = entries;
  std::sort(sorted.begin(), sorted.end(), [](const auto& a, const auto& b) { return a.id() < b.id(); });
  cotune::detail::sha256_hasher h;
  h.field(format_name).field(std::to_string(sorted.size()));
  for (const auto& e : sorted) {
    h.field(e.kernel).field(e.key).field(e.device).field(e.fingerprint).field(e.date).field(e.host);
    h.field(e.cotune_version).field(e.winner.text());
    if (!e.launch_options) h.field("launch_options: false"); // only then: older databases keep their digest
    for (double t : e.time) h.field(cotune::detail::json_number(t));
    h.field(e.detail ? std::to_string(e.detail->candidates.size()) : std::string("-"));
    if (e.detail)
      for (const auto& c : e.detail->candidates) {
        h.field(c.cfg.text()).field(to_string(c.status)).field(c.reason);
        for (double t : c.time) h.field(cotune::detail::json_number(t));
      }
  }
  return cotune::detail::to_hex(h.digest());
}

COTUNE_DECL bool within_noise(const database_entry& a, const database_entry& b, double tolerance) {
  const auto finite = [](const timings& t) { return std::isfinite(t[0]) && std::isfinite(t[1]) && std::isfinite(t[2]); };
  if (!finite(a.time) || !finite(b.time)) return false;
  if (std::max(a.time[1], b.time[1]) <= std::min(a.time[2], b.time[2])) return true;
  const double faster = std::min(a.time[0], b.time[0]);
  return faster > 0 && std::abs(a.time[0] - b.time[0]) <= tolerance * faster;
}

COTUNE_DECL std::vector<database_change> diff(const tuning_database& a, const tuning_database& b, double tolerance) {
  using kind = database_change::kind;
  // Indexed, so that two databases of the entry limit's size compare in linear time.
  auto index = [](const tuning_database& db) {
    std::unordered_map<std::string, const database_entry*> out;
    for (const auto& e : db.entries()) out.try_emplace(detail::id_text(e), &e);
    return out;
  };
  const auto in_a = index(a), in_b = index(b);
  std::vector<database_change> out;
  for (const auto& e : a.entries()) {
    const auto it = in_b.find(detail::id_text(e));
    if (it == in_b.end()) out.push_back({kind::removed, &e, nullptr});
    else if (it->second->winner == e.winner) out.push_back({kind::same, &e, it->second});
    else out.push_back({within_noise(e, *it->second, tolerance) ? kind::tied : kind::changed, &e, it->second});
  }
  for (const auto& e : b.entries())
    if (!in_a.contains(detail::id_text(e))) out.push_back({database_change::kind::added, nullptr, &e});
  return out;
}

COTUNE_DECL std::string imported_database_key() {
  return cotune::detail::sha256_hex("cotune-imported-tuning-database");
}

COTUNE_DECL tuning_database imported_database(const std::filesystem::path& root, std::string_view secret) {
  file_cache cache(root, imported_database_key());
  auto text = cache.get(imported_database_file);
  if (!text) return {};
  return tuning_database::from_json(*text, secret, (cache.dir() / imported_database_file).string());
}

COTUNE_DECL std::size_t import_database(const std::filesystem::path& root, const tuning_database& db,
                                   std::string_view secret) {
  // Checked before anything is read or written: an entry no reader accepts would make the cache's
  // database unreadable, and with it every later lookup and import.
  for (const auto& e : db.entries())
    if (auto why = e.problem(); !why.empty())
      throw database_error(fmt::format(COTUNE_FMT("{}: cannot import the entry of kernel '{}', key '{}': {}"),
                                       root.string(), shown_text(e.kernel), shown_text(e.key, 200), why));
  tuning_database merged = imported_database(root, secret);
  merged.merge(db);
  // Refused here, not stored: a cache database past the limit would be refused by every reader.
  if (merged.size() > max_candidates())
    throw database_error(
        fmt::format(COTUNE_FMT("{}: importing {} entries would make the cache's database hold {}, more than the "
                               "limit of {} ({}); raise the limit, or import into another cache (--dir)"),
                    root.string(), db.size(), merged.size(), max_candidates(), max_candidates_knob));
  file_cache cache(root, imported_database_key());
  cache.put(merged.json(secret), imported_database_file);
  return merged.size();
}

} // namespace cotune::batch
