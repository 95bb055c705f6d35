#pragma once
/// \file `cotune::hook<R(Ts...)>`: the type of every callable a tuner's options hold (hooks, `grid`,
/// `on_load`, `verify`, heuristics, pruning). It is a `std::function<R(Ts...)>` that also takes a
/// callable naming only the leading arguments it uses, so that a user need not write every argument
/// type again:
///
///     .grid = [](const cotune::config& c, const auto&... args) { ... },  // generic: all of them
///     .on_load = [&](const cotune::module_view& m) { ... },              // the module only
///     .verify = [&](const cotune::config& c, const image_in& in) { ... }, // the first two
///
/// A callable that takes every argument is stored as it is (as std::function would); otherwise the
/// longest list of leading arguments it can be called with is passed to it.

#include <cotune/detail/config.hpp> // first: a pre-C++20 compile stops at its one message
#include <cstddef>
#include <functional>
#include <tuple>
#include <type_traits>
#include <utility>

namespace cotune {

namespace detail {

/// Whether `F` can be called with the first `K` of `Ts...` and its result converts to `R` (or `R` is void).
template <class F, class R, std::size_t K, class... Ts>
consteval bool callable_with_leading() {
  return []<std::size_t... I>(std::index_sequence<I...>) {
    using all = std::tuple<Ts...>;
    if constexpr (!std::is_invocable_v<F&, std::tuple_element_t<I, all>...>) return false;
    else if constexpr (std::is_void_v<R>) return true;
    else return std::is_convertible_v<std::invoke_result_t<F&, std::tuple_element_t<I, all>...>, R>;
  }(std::make_index_sequence<K>{});
}

/// The most leading arguments of `Ts...`, at most `K`, that `F` can be called with; sizeof...(Ts) + 1
/// when none fits. Searched from `K` down, stopping at the first fit, so that a callable is never
/// tried with fewer arguments than it takes (a generic lambda's body is instantiated only for the
/// arguments it will get).
template <class F, class R, std::size_t K, class... Ts>
consteval std::size_t leading_arity_from() {
  if constexpr (callable_with_leading<F, R, K, Ts...>()) return K;
  else if constexpr (K == 0) return sizeof...(Ts) + 1;
  else return leading_arity_from<F, R, K - 1, Ts...>();
}

/// The most leading arguments of `Ts...` that `F` can be called with (see leading_arity_from).
template <class F, class R, class... Ts>
consteval std::size_t leading_arity() {
  return leading_arity_from<F, R, sizeof...(Ts), Ts...>();
}

} // namespace detail

template <class Signature>
class hook;

/// A `std::function<R(Ts...)>` that also takes callables naming only its leading arguments (see the file comment).
template <class R, class... Ts>
class hook<R(Ts...)> : public std::function<R(Ts...)> {
  using base = std::function<R(Ts...)>;

public:
  hook() noexcept = default;
  hook(std::nullptr_t) noexcept {}
  hook(const base& f) : base(f) {}
  hook(base&& f) noexcept : base(std::move(f)) {}

  /// A callable taking all of `Ts...`, or the leading ones it names.
  template <class F>
    requires(!std::is_same_v<std::remove_cvref_t<F>, hook> && !std::is_same_v<std::remove_cvref_t<F>, base> &&
             detail::leading_arity<std::decay_t<F>, R, Ts...>() <= sizeof...(Ts))
  hook(F&& f) : base(wrap(std::forward<F>(f))) {}

private:
  template <class F>
  static base wrap(F&& f) {
    using D = std::decay_t<F>;
    constexpr std::size_t k = detail::leading_arity<D, R, Ts...>();
    if constexpr (k == sizeof...(Ts)) {
      return base(std::forward<F>(f)); // as std::function stores it (a null function pointer stays empty)
    } else {
      return [g = D(std::forward<F>(f))](Ts... args) mutable -> R {
        return [&]<std::size_t... I>(std::index_sequence<I...>) -> R {
          [[maybe_unused]] auto all = std::forward_as_tuple(std::forward<Ts>(args)...);
          return static_cast<R>(std::invoke(g, std::get<I>(std::move(all))...));
        }(std::make_index_sequence<k>{});
      };
    }
  }
};

} // namespace cotune
