#pragma once
/// \file The bodies of knobs/knob.hpp's registry and snapshot (compiled once with
/// COTUNE_SEPARATE_COMPILATION, see detail/config.hpp).

#include <algorithm>
#include <any>
#include <cstdint>
#include <optional>
#include <mutex>
#include <string>
#include <utility>
#include <vector>

#include <fmt/core.h>

#include <cotune/core/errors.hpp>
#include <cotune/knobs/knob.hpp>

namespace cotune {

COTUNE_DECL knob_registry& knob_registry::instance() {
  static knob_registry r;
  return r;
}

COTUNE_DECL void knob_registry::add(knob_base* k) {
  std::lock_guard lock(mutex_);
  knobs_.push_back(k);
}

COTUNE_DECL void knob_registry::remove(const knob_base* k) {
  std::lock_guard lock(mutex_);
  std::erase(knobs_, k);
}

COTUNE_DECL void knob_registry::check() const {
  std::string problems;
  std::size_t bad = 0;
  for (auto* k : all()) {
    try {
      (void)k->current_text();
    } catch (const knob_error& e) {
      problems += fmt::format(COTUNE_FMT("\n  {}"), e.what());
      ++bad;
    }
  }
  if (bad)
    throw knob_error(fmt::format(COTUNE_FMT("{} setting{} cannot be used; fix or unset {}:{}"), bad,
                                 bad == 1 ? "" : "s", bad == 1 ? "it" : "them", problems));
}

COTUNE_DECL std::vector<knob_base*> knob_registry::all() const {
  std::lock_guard lock(mutex_);
  return knobs_;
}

COTUNE_DECL std::string knob_registry::invalidating_text() const {
  std::vector<std::string> parts;
  for (auto* k : all()) {
    if (!k->invalidates_caches() || !k->is_set()) continue;
    auto text = k->current_text();
    if (text != k->default_text()) parts.push_back(k->env() + "=" + std::move(text));
  }
  std::sort(parts.begin(), parts.end());
  std::string out;
  for (auto& p : parts) out += p + ";";
  return out;
}

COTUNE_DECL knob_snapshot::knob_snapshot() {
  for (auto* k : knob_registry::instance().all()) saved_.emplace_back(k, k->save());
}

COTUNE_DECL knob_snapshot::~knob_snapshot() {
  // Walk the live knobs (a saved one may have been destroyed since) and match them to the saved state.
  for (auto* k : knob_registry::instance().all()) {
    auto it = std::find_if(saved_.begin(), saved_.end(), [k](const auto& s) { return s.first == k; });
    if (it != saved_.end()) k->restore(it->second);
    else k->reset();
  }
}

#if !COTUNE_HEADER_ONLY
template class knob<bool>;
template class knob<int>;
template class knob<std::int64_t>;
template class knob<double>;
template class knob<std::string>;
template class knob<std::optional<std::string>>;
#endif

} // namespace cotune
