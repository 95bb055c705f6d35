#pragma once
/// \file `cotune::kernel_arguments<Args...>`: what each argument of a kernel `void(Args...)` is for
/// (part of the tuning key, zeroed, restored), the tuning key, a new key's description (its text and
/// the heuristics' values) and pruning, and the hooks around one benchmark run. The autotuner's hot
/// path is `make_key`; the rest runs while tuning.

#include <cotune/detail/config.hpp> // first: a pre-C++20 compile stops at its one message
#include <algorithm>
#include <any>
#include <array>
#include <bit>
#include <cstddef>
#include <cstdint>
#include <exception>
#include <functional>
#include <memory>
#include <span>
#include <string>
#include <string_view>
#include <tuple>
#include <type_traits>
#include <typeinfo>
#include <utility>
#include <variant>
#include <vector>

#include <fmt/core.h>

#include <cotune/backend/backend.hpp>
#include <cotune/core/buffer.hpp>
#include <cotune/core/config.hpp>
#include <cotune/core/errors.hpp>
#include <cotune/core/value.hpp>
#include <cotune/tune/tune_options.hpp>
#include <cotune/tune/tuning_key.hpp>

namespace cotune {

namespace detail {

template <class T>
using bare = std::remove_cvref_t<T>;

/// Calls f(arg, index) for each element of a tuple, in order.
template <class Tuple, class F>
void for_each_indexed(Tuple& t, F&& f) {
  [&]<std::size_t... I>(std::index_sequence<I...>) {
    (f(std::get<I>(t), I), ...);
  }(std::make_index_sequence<std::tuple_size_v<std::remove_cvref_t<Tuple>>>{});
}

/// One key word for a heuristic's value.
[[nodiscard]] COTUNE_DECL std::uint64_t value_word(const value& v);

/// A buffer whose element type name is a whole key text, printed without the argument's name (a job's
/// `batch::argument_pack`, whose key text is the instance's: `A: float32, n=256`, as the database writes it).
template <class A>
concept names_whole_key = requires { requires A::element_type_name_is_key_text; };

} // namespace detail

/// What a new key's first call says about itself, from one walk of its arguments and one run of each
/// heuristic: the key's text and the heuristics' values (added to every candidate by `prune`).
struct call_description {
  std::string key_text;
  std::vector<value> heuristics; ///< in the order of tune_options::heuristics
};

/// The roles of a kernel's arguments, checked once against the options (a name that is not an
/// argument, or a role an argument cannot take, is an autotuner_error naming both).
template <class... Args>
class kernel_arguments {
  // A std::vector or std::array taken by value would be a copy made for each call: the kernel would
  // fill the copy and the caller would never see its output.
  static_assert(((!HostRange<std::remove_cvref_t<Args>> || std::is_reference_v<Args> ||
                  std::ranges::enable_borrowed_range<std::remove_cvref_t<Args>>) && ...),
                "a container argument taken by value is a copy: declare it as std::span<T> or by reference "
                "(std::vector<T>&, std::array<T, N>&) so that the kernel writes into the caller's memory");

public:
  static constexpr std::size_t arity = sizeof...(Args);
  using options = tune_options<Args...>;

  /// `opts` must outlive this object (the autotuner owns both).
  kernel_arguments(const std::string& kernel_name, const options& opts) : kernel_name_(kernel_name), opts_(&opts) {
    if (opts.arg_names.size() != arity)
      throw autotuner_error(fmt::format("autotuner for '{}': {} argument names given, but the kernel takes {}",
                                        kernel_name_, opts.arg_names.size(), arity));
    is_key_.assign(arity, false);
    is_reset_.assign(arity, false);
    is_restore_.assign(arity, false);
    mark(opts.key, is_key_, "key", [](bool scalar, bool buffer, bool) { return scalar || buffer; });
    mark(opts.reset_to_zero, is_reset_, "reset_to_zero", [](bool, bool, bool writable) { return writable; });
    mark(opts.restore_value, is_restore_, "restore_value", [](bool, bool, bool writable) { return writable; });
    std::size_t words = opts.heuristics.size();
    std::tuple<detail::bare<Args>*...> probe{};
    detail::for_each_indexed(probe, [&](auto* p, std::size_t i) {
      using A = std::remove_pointer_t<decltype(p)>;
      if constexpr (AnyBuffer<A>) words += is_key_[i] ? 2 : 1;
      else words += is_key_[i] ? 1 : 0;
    });
    if (words > tuning_key::capacity)
      throw autotuner_error(fmt::format("autotuner for '{}': the tuning key needs {} words, at most {} are supported",
                                        kernel_name_, words, tuning_key::capacity));
    for (const auto& [name, fn] : opts.heuristics)
      if (!is_identifier(name))
        throw autotuner_error(
            fmt::format("autotuner for '{}': heuristic name '{}' is not a C identifier", kernel_name_, name));
    static const std::array<const std::type_info*, arity> types{&typeid(detail::bare<Args>)...};
    types_ = types;
    is_poison_.assign(arity, false);
    detail::for_each_indexed(probe, [&](auto* p, std::size_t i) {
      is_poison_[i] = opts.poison_outputs && poisonable<std::remove_pointer_t<decltype(p)>> && !is_reset_[i] &&
                      !is_restore_[i];
    });
  }

  /// Fills the buffers a verification run must write (writable buffers that reset_to_zero and
  /// restore_value do not name) with a poison pattern, so that a candidate that writes nothing shows
  /// up as wrong instead of passing on the previous candidate's outputs (tune_options::poison_outputs).
  void poison_outputs(Args&... args) const {
    std::tuple<Args&...> t(args...);
    detail::for_each_indexed(t, [&](auto& a, std::size_t i) {
      if constexpr (poisonable<detail::bare<decltype(a)>>)
        if (is_poison_[i]) as_buffer(a).poison();
    });
  }

  /// Which arguments poison_outputs fills (one flag per argument).
  [[nodiscard]] const std::vector<bool>& poisoned() const noexcept { return is_poison_; }

  /// The tuning key of a call: each buffer's element type (and extent, if it is a key), each key
  /// scalar's value, each heuristic's value. Allocates nothing.
  [[nodiscard]] tuning_key make_key(const Args&... args) const {
    tuning_key key;
    std::tuple<const Args&...> t(args...);
    detail::for_each_indexed(t, [&](const auto& a, std::size_t i) {
      using A = detail::bare<decltype(a)>;
      if constexpr (AnyBuffer<A>) {
        if constexpr (CheckedBuffer<A>) a.check_argument(kernel_name_, i, opts_->arg_names[i]);
        key.push(detail::element_type_word(as_buffer(a)));
        if (is_key_[i]) key.push(static_cast<std::uint64_t>(as_buffer(a).size()));
      } else if constexpr (detail::key_scalar<A>) {
        if (is_key_[i]) key.push(detail::key_word(a));
      }
    });
    for (const auto& h : opts_->heuristics) key.push(detail::value_word(h.second(args...)));
    return key;
  }

  /// Refuses a buffer bound to another GPU than the one the kernel runs on (`ordinal`, described as
  /// `device`): cotune::DeviceBoundBuffer, a DLPack tensor. The error names the argument and the fix.
  void check_devices(int ordinal, std::string_view device, const Args&... args) const {
    std::tuple<const Args&...> t(args...);
    detail::for_each_indexed(t, [&](const auto& a, std::size_t i) {
      if constexpr (DeviceBoundBuffer<detail::bare<decltype(a)>>)
        if (a.device_ordinal() != ordinal)
          throw autotuner_error(fmt::format(
              "autotuner for '{}': argument {} ('{}') is in the memory of device {}, but the kernel runs on {}; move "
              "it there (x.to('cuda:{}') in PyTorch), or tune on its device (tune_options::device, an index into the "
              "backend's devices)",
              kernel_name_, i, opts_->arg_names[i], a.device_ordinal(), device, ordinal));
    });
  }

  /// The text of the key, as printed and hashed into the result cache ("x: float[4096], n=4096").
  [[nodiscard]] std::string key_text(const Args&... args) const { return describe(args...).key_text; }

  /// The key's text and the heuristics' values: the arguments walked once, each heuristic run once.
  [[nodiscard]] call_description describe(const Args&... args) const {
    call_description d;
    std::string& out = d.key_text;
    auto add = [&](std::string part) { out += (out.empty() ? "" : ", ") + part; };
    std::tuple<const Args&...> t(args...);
    detail::for_each_indexed(t, [&](const auto& a, std::size_t i) {
      using A = detail::bare<decltype(a)>;
      const auto& name = opts_->arg_names[i];
      if constexpr (AnyBuffer<A>) {
        if constexpr (CheckedBuffer<A>) a.check_argument(kernel_name_, i, name);
        const auto& b = as_buffer(a);
        if constexpr (detail::names_whole_key<A>) add(std::string(b.element_type_name()));
        else if (is_key_[i]) add(fmt::format("{}: {}[{}]", name, b.element_type_name(), b.size()));
        else add(fmt::format("{}: {}", name, b.element_type_name()));
      } else if constexpr (detail::key_scalar<A>) {
        if (is_key_[i]) add(fmt::format("{}={}", name, value_of(a).text()));
      }
    });
    for (const auto& [name, fn] : opts_->heuristics) {
      d.heuristics.push_back(fn(args...));
      add(fmt::format("{}={}", name, d.heuristics.back().text()));
    }
    return d;
  }

  /// The candidates worth measuring for a call described by `d`: early_config_prune, then perf_model's
  /// top_k, then the heuristics' values (d.heuristics) added to each.
  [[nodiscard]] std::vector<config> prune(const std::vector<config>& configs, const call_description& d,
                                          const Args&... args) const {
    std::vector<config> pruned = configs;
    if (opts_->early_config_prune) {
      pruned = opts_->early_config_prune(configs, args...);
      if (pruned.empty())
        throw autotuner_error(fmt::format("autotuner for '{}': no configs left after early_config_prune (key {}); "
                                          "it must return at least one config",
                                          kernel_name_, d.key_text));
    }
    if (opts_->perf_model) {
      const std::size_t k = top_k(pruned.size());
      if (pruned.size() > k) {
        std::vector<std::pair<double, std::size_t>> scored;
        for (std::size_t i = 0; i < pruned.size(); ++i) scored.emplace_back(opts_->perf_model(pruned[i], args...), i);
        std::stable_sort(scored.begin(), scored.end(), [](auto& a, auto& b) { return a.first < b.first; });
        std::vector<config> kept;
        for (std::size_t i = 0; i < k; ++i) kept.push_back(pruned[scored[i].second]);
        pruned = std::move(kept);
      }
    }
    for (std::size_t h = 0; h < opts_->heuristics.size(); ++h) {
      const std::string& name = opts_->heuristics[h].first;
      for (auto& c : pruned) {
        if (c.contains(name))
          throw autotuner_error(fmt::format("autotuner for '{}': conflicting meta-parameters: heuristic '{}' is also "
                                            "a parameter of config {{{}}}; don't re-define auto-tuned symbols",
                                            kernel_name_, name, c.text()));
        c.set(name, d.heuristics[h]);
      }
    }
    return pruned;
  }

  /// Zeroes the reset_to_zero buffers (Triton's reset-only pre-hook before the real launch).
  void reset_buffers(Args&... args) const {
    std::tuple<Args&...> t(args...);
    detail::for_each_indexed(t, [&](auto& a, std::size_t i) {
      if constexpr (is_writable_buffer<detail::bare<decltype(a)>>)
        if (is_reset_[i]) as_buffer(a).zero();
    });
  }

  /// Runs the config's own pre-hook, if it has one, with the call's arguments.
  void config_pre_hook(const config& c, Args&... args) const {
    if (!c.pre_hook() || !c.pre_hook()->fn) return;
    std::array<void*, arity> ptrs{const_cast<void*>(static_cast<const void*>(std::addressof(args)))...};
    c.pre_hook()->fn(hook_args{c, ptrs, types_, opts_->arg_names});
  }

  /// Whether `run_once` with config `c` does host work besides the launch (the config's pre-hook,
  /// reset_to_zero, restore_value, the user's hooks). Such a run must not be captured into a graph
  /// and replayed: the hooks would run once, at capture, and restore_value's snapshot is freed after
  /// each run.
  [[nodiscard]] bool runs_host_work(const config& c) const noexcept {
    const auto any = [](const std::vector<bool>& flags) {
      return std::find(flags.begin(), flags.end(), true) != flags.end();
    };
    return (c.pre_hook() && c.pre_hook()->fn) || any(is_reset_) || any(is_restore_) || opts_->pre_hook ||
           opts_->post_hook;
  }

  /// One benchmark run: config pre-hook, built-in and user pre-hooks, the launch, then the post
  /// hooks, which always run (and see the exception if the launch failed). `saved` holds the
  /// restore_value snapshots between the two (one slot per argument).
  template <class B>
  void run_once(const B& backend, const typename B::function& fn, const config& c, const launch_grid& g,
                std::vector<std::any>& saved, Args&... args) const {
    config_pre_hook(c, args...);
    builtin_pre(saved, args...);
    if (opts_->pre_hook) opts_->pre_hook(args...);
    try {
      backend.launch(fn, g, args...);
    } catch (...) {
      auto failure = std::current_exception();
      builtin_post(saved, args...);
      if (opts_->post_hook) opts_->post_hook(failure, args...);
      throw;
    }
    builtin_post(saved, args...);
    if (opts_->post_hook) opts_->post_hook(nullptr, args...);
  }

private:
  /// How many of `count` candidates perf_model keeps.
  [[nodiscard]] std::size_t top_k(std::size_t count) const {
    if (auto* n = std::get_if<std::int64_t>(&opts_->top_k)) {
      if (*n < 1)
        throw autotuner_error(fmt::format("autotuner for '{}': top_k must be at least 1 (got {})", kernel_name_, *n));
      return static_cast<std::size_t>(*n);
    }
    const double f = std::get<double>(opts_->top_k);
    if (!(f > 0.0 && f <= 1.0))
      throw autotuner_error(
          fmt::format("autotuner for '{}': a fractional top_k must be in (0, 1] (got {})", kernel_name_, f));
    // Of the early-pruned list (Triton counts the unpruned list), and never 0.
    return std::max<std::size_t>(1, static_cast<std::size_t>(static_cast<double>(count) * f));
  }

  template <class A>
  static constexpr bool poisonable = is_writable_buffer<A> && requires(A& a) { as_buffer(a).poison(); };

  template <class A>
  static value value_of(const A& a) {
    if constexpr (std::is_enum_v<A>) return value(static_cast<std::int64_t>(a));
    else if constexpr (std::is_same_v<A, bool>) return value(a);
    else if constexpr (std::is_floating_point_v<A>) return value(static_cast<double>(a));
    else return value(static_cast<std::int64_t>(a));
  }

  template <class Allowed>
  void mark(const std::vector<std::string>& names, std::vector<bool>& flags, const char* what, Allowed allowed) {
    std::tuple<detail::bare<Args>*...> probe{};
    for (const auto& name : names) {
      bool found = false;
      detail::for_each_indexed(probe, [&](auto* p, std::size_t i) {
        using A = std::remove_pointer_t<decltype(p)>;
        if (opts_->arg_names[i] != name) return;
        found = true;
        if (!allowed(detail::key_scalar<A>, AnyBuffer<A>, is_writable_buffer<A>)) {
          if (AnyBuffer<A>)
            throw autotuner_error(fmt::format("autotuner for '{}': argument '{}' cannot be used in {}: its elements "
                                              "are const (a read-only view cannot be zeroed or restored); declare it "
                                              "as a view of mutable elements, or leave it out of {}",
                                              kernel_name_, name, what, what));
          if (detail::key_scalar<A>)
            throw autotuner_error(fmt::format("autotuner for '{}': argument '{}' cannot be used in {}: it is a scalar, "
                                              "passed by value, so there is nothing to {}; {} takes buffers only",
                                              kernel_name_, name, what,
                                              std::string_view(what) == "reset_to_zero" ? "zero" : "restore", what));
          if (std::is_pointer_v<A>)
            throw autotuner_error(fmt::format("autotuner for '{}': argument '{}' cannot be used in {}: it is a raw "
                                              "pointer, whose extent cotune cannot know; pass a buffer instead "
                                              "(cotune::host_span<T>(ptr, n) or std::span<T> for host memory, "
                                              "cuda::device_view(ptr, n, device) for device memory)",
                                              kernel_name_, name, what));
          throw autotuner_error(fmt::format("autotuner for '{}': argument '{}' cannot be used in {}: it is neither "
                                            "a scalar nor a buffer (cotune::Buffer)",
                                            kernel_name_, name, what));
        }
        flags[i] = true;
      });
      if (!found) {
        std::string known;
        for (const auto& n : opts_->arg_names) known += (known.empty() ? "" : ", ") + n;
        throw autotuner_error(fmt::format("autotuner for '{}': {} names '{}', which is not an argument (arguments: {})",
                                          kernel_name_, what, name, known));
      }
    }
  }

  void builtin_pre(std::vector<std::any>& saved, Args&... args) const {
    reset_buffers(args...);
    std::tuple<Args&...> t(args...);
    detail::for_each_indexed(t, [&](auto& a, std::size_t i) {
      using A = detail::bare<decltype(a)>;
      if constexpr (is_writable_buffer<A>)
        // Held through a shared_ptr: std::any needs a copyable value, and device snapshots are move-only.
        if (is_restore_[i]) {
          decltype(auto) b = as_buffer(a);
          using S = typename std::remove_cvref_t<decltype(b)>::snapshot_type;
          saved[i] = std::make_shared<const S>(b.snapshot());
        }
    });
  }

  void builtin_post(std::vector<std::any>& saved, Args&... args) const {
    std::tuple<Args&...> t(args...);
    detail::for_each_indexed(t, [&](auto& a, std::size_t i) {
      using A = detail::bare<decltype(a)>;
      if constexpr (is_writable_buffer<A>)
        if (is_restore_[i] && saved[i].has_value()) {
          decltype(auto) b = as_buffer(a);
          using S = typename std::remove_cvref_t<decltype(b)>::snapshot_type;
          b.restore(*std::any_cast<const std::shared_ptr<const S>&>(saved[i]));
          saved[i].reset();
        }
    });
  }

  std::string kernel_name_;
  const options* opts_;
  std::vector<bool> is_key_, is_reset_, is_restore_, is_poison_;
  std::array<const std::type_info*, arity> types_{};
};

} // namespace cotune

#if COTUNE_HEADER_ONLY
#include <cotune/tune/detail/kernel_arguments.ipp>
#endif
