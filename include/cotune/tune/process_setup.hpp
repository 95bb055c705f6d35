#pragma once
/// \file `detail::process_setup<B>`: header-only, the process-wide set-up a tuner needs (the core and
/// search knob groups in the registry, and whatever a higher layer adds, such as the shipped
/// database's lookup), made during static initialisation by each file that instantiates a tuner.
///
/// With COTUNE_SEPARATE_COMPILATION the impl/src.hpp file makes these registrations once, as inline
/// variables of its own. Header-only they used to be inline variables of every file that included
/// the headers, so that `#include <cotune/cotune.hpp>` and an empty `main` emitted 179 KB of code
/// (every knob group's constructor, the tuning database's reader) and took twice as long to compile
/// (issue 38). A static member of a class template is instantiated only where it is used: here, by
/// `tuning_job`'s constructor.

#include <cotune/detail/config.hpp> // first: a pre-C++20 compile stops at its one message

#include <cotune/knobs/knobs.hpp>
#include <cotune/search/search_knobs.hpp>

namespace cotune::detail {

/// The argument of the set-up hooks, named by backend so that the call below depends on it.
template <class B>
struct process_setup_tag {};

/// The hook a layer above tune/ overloads, in this namespace, for `process_setup_tag<B>` (found by
/// argument-dependent lookup where a tuner is instantiated): batch/shipped_database.hpp installs the
/// shipped-database lookup with it. This one, less specialised, is chosen where no layer adds one.
template <class Tag>
void add_process_setup(Tag) {}

#if COTUNE_HEADER_ONLY
template <class B>
struct process_setup {
  /// Registers the knob groups, so that `cotune knobs` lists them and the first key computed in the
  /// process already sees their cache-invalidating knobs (COTUNE_HOST_CXXFLAGS, ...).
  static inline const bool done = [] {
    (void)knobs();
    (void)search_knobs();
    add_process_setup(process_setup_tag<B>{});
    return true;
  }();
};
#endif

/// Makes sure that the set-up of a tuner of backend `B` ran (a no-op: it ran at static initialisation).
template <class B>
void ensure_process_setup() {
#if COTUNE_HEADER_ONLY
  // Taking the address odr-uses the member, which instantiates it and its initialisation.
  [[maybe_unused]] const bool* done = &process_setup<B>::done;
#endif
}

} // namespace cotune::detail
