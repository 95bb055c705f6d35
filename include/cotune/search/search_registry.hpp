#pragma once
/// \file `cotune::search_registry`: search strategies by name, the built-ins and a user's own. What
/// `COTUNE_SEARCH` names, what its check accepts and what `cotune knobs` lists all come from here
/// (nvbench registers its stopping criteria the same way).
///
///     // once, before the first tuning (a namespace-scope initialiser does it before main):
///     static const bool mine = cotune::register_search("mine", [] { return std::make_shared<my_search>(); },
///                                                      "my own strategy");
///     // then COTUNE_SEARCH=mine picks it, as it picks a built-in.

#include <cotune/detail/config.hpp> // first: a pre-C++20 compile stops at its one message
#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <string>
#include <vector>

#include <cotune/detail/config.hpp>
#include <cotune/search/search_strategy.hpp>

namespace cotune {

/// Makes the strategy a name stands for (called at each use of the name; strategies are immutable,
/// so returning one shared instance is fine).
using search_factory = std::function<std::shared_ptr<const search_strategy>()>;

/// The process's strategies by name. Thread-safe.
class search_registry {
public:
  /// One registered strategy.
  struct entry {
    std::string name;
    std::string doc; ///< one line for `cotune knobs` and errors
    search_factory make;
  };

  /// The registry, holding the built-ins (exhaustive, random, local, evolution, bayes, bayes-local)
  /// from its first use on.
  [[nodiscard]] COTUNE_DECL static search_registry& instance();

  /// Registers `make` under `name` (letters, digits, '-' and '_'). Throws cotune::error for a name
  /// already taken (a built-in's too: pick another name) or not of those characters, or no factory.
  COTUNE_DECL void add(std::string name, search_factory make, std::string doc = {});

  /// The strategy `name` stands for; nothing for an unknown name.
  [[nodiscard]] COTUNE_DECL std::shared_ptr<const search_strategy> make(const std::string& name) const;
  [[nodiscard]] COTUNE_DECL bool contains(const std::string& name) const;
  /// The names, in registration order (the built-ins first).
  [[nodiscard]] COTUNE_DECL std::vector<std::string> names() const;
  /// Every entry's name and doc, "name (doc), ...", in registration order: for messages and knob docs.
  [[nodiscard]] COTUNE_DECL std::string describe() const;

private:
  COTUNE_DECL search_registry();

  mutable std::mutex mutex_;
  std::vector<entry> entries_;
};

/// Registers a user's strategy under `name` (see search_registry::add); returns true, so that a
/// namespace-scope `static const bool` can do it before main.
inline bool register_search(std::string name, search_factory make, std::string doc = {}) {
  search_registry::instance().add(std::move(name), std::move(make), std::move(doc));
  return true;
}

} // namespace cotune

#if COTUNE_HEADER_ONLY
#include <cotune/search/search_registry.ipp>
#endif
