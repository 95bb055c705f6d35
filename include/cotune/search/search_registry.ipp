#pragma once
/// \file The bodies of search/search_registry.hpp (compiled once with COTUNE_SEPARATE_COMPILATION, see
/// detail/config.hpp).

#include <algorithm>
#include <memory>
#include <mutex>
#include <string>
#include <utility>
#include <vector>

#include <fmt/core.h>

#include <cotune/core/errors.hpp>
#include <cotune/search/bayes_local_search.hpp>
#include <cotune/search/bayesian_search.hpp>
#include <cotune/search/evolutionary_search.hpp>
#include <cotune/search/exhaustive_search.hpp>
#include <cotune/search/local_search.hpp>
#include <cotune/search/search_registry.hpp>

namespace cotune {

COTUNE_DECL search_registry& search_registry::instance() {
  static search_registry r;
  return r;
}

COTUNE_DECL search_registry::search_registry() {
  const auto builtin = [&](std::string name, std::string doc, auto make) {
    entries_.push_back({std::move(name), std::move(doc), [make] { return make(); }});
  };
  builtin("exhaustive", "every candidate, in order", [] { return std::make_shared<exhaustive_search>(); });
  builtin("random", "uniform sampling", [] { return std::make_shared<random_search>(); });
  builtin("local", "best-first local search over neighbouring parameter values",
          [] { return std::make_shared<local_search>(); });
  builtin("evolution", "genetic algorithm", [] { return std::make_shared<evolutionary_search>(); });
  builtin("bayes", "tree-structured Parzen estimator", [] { return std::make_shared<bayesian_search>(); });
  builtin("bayes-local", "a Parzen estimator proposing across the space and beside the best; the default with a budget",
          [] { return std::make_shared<bayes_local_search>(); });
}

COTUNE_DECL void search_registry::add(std::string name, search_factory make, std::string doc) {
  const bool word = !name.empty() && std::all_of(name.begin(), name.end(), [](char c) {
    return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '-' || c == '_';
  });
  if (!word)
    throw error(fmt::format(
        COTUNE_FMT("register_search: '{}' is not a strategy name; use letters, digits, '-' and '_'"), name));
  if (!make) throw error(fmt::format(COTUNE_FMT("register_search: strategy '{}' has no factory"), name));
  std::lock_guard lock(mutex_);
  for (const auto& e : entries_)
    if (e.name == name)
      throw error(fmt::format(
          COTUNE_FMT("register_search: a strategy named '{}' is registered already; give yours another name"), name));
  entries_.push_back({std::move(name), std::move(doc), std::move(make)});
}

COTUNE_DECL std::shared_ptr<const search_strategy> search_registry::make(const std::string& name) const {
  search_factory make;
  {
    std::lock_guard lock(mutex_);
    for (const auto& e : entries_)
      if (e.name == name) make = e.make;
  }
  return make ? make() : nullptr;
}

COTUNE_DECL bool search_registry::contains(const std::string& name) const {
  std::lock_guard lock(mutex_);
  return std::any_of(entries_.begin(), entries_.end(), [&](const entry& e) { return e.name == name; });
}

COTUNE_DECL std::vector<std::string> search_registry::names() const {
  std::lock_guard lock(mutex_);
  std::vector<std::string> out;
  for (const auto& e : entries_) out.push_back(e.name);
  return out;
}

COTUNE_DECL std::string search_registry::describe() const {
  std::lock_guard lock(mutex_);
  std::string out;
  for (const auto& e : entries_)
    out += fmt::format(COTUNE_FMT("{}{}{}"), out.empty() ? "" : ", ", e.name, e.doc.empty() ? "" : " (" + e.doc + ")");
  return out;
}

} // namespace cotune
