#pragma once
/// \file `cotune::knob<T>`: one setting bound to an environment variable, plus the knob registry.

#include <cotune/detail/config.hpp> // first: a pre-C++20 compile stops at its one message
#include <algorithm>
#include <any>
#include <cctype>
#include <charconv>
#include <cmath>
#include <cstdint>
#include <cstdlib>
#include <functional>
#include <mutex>
#include <optional>
#include <string>
#include <string_view>
#include <type_traits>
#include <utility>
#include <vector>

#include <fmt/core.h>

#include <cotune/core/errors.hpp>
#include <cotune/detail/config.hpp>
#include <cotune/detail/json.hpp>

namespace cotune {

/// What every knob tells about itself (for docs/knobs.md, `cotune knobs`, and cache keys).
class knob_base {
public:
  knob_base(const knob_base&) = delete;
  knob_base& operator=(const knob_base&) = delete;
  virtual ~knob_base() = default;

  [[nodiscard]] const std::string& name() const noexcept { return name_; } ///< "cache.dir"
  [[nodiscard]] const std::string& env() const noexcept { return env_; }   ///< "COTUNE_CACHE_DIR"
  [[nodiscard]] const std::string& doc() const noexcept { return doc_; }
  [[nodiscard]] bool invalidates_caches() const noexcept { return invalidating_; }
  /// A secret (a password, a signing key): tools never show its value.
  [[nodiscard]] bool is_secret() const noexcept { return secret_; }
  /// "bool", "int", "float", "string", "optional string".
  [[nodiscard]] virtual std::string type_name() const = 0;
  /// The default, as text (computed defaults are described, e.g. "$XDG_CACHE_HOME/cotune").
  [[nodiscard]] const std::string& default_text() const noexcept { return default_text_; }
  /// The current value as text; throws knob_error if the environment holds an unparsable value.
  [[nodiscard]] virtual std::string current_text() const = 0;
  /// True when set in code or in the environment (non-empty).
  [[nodiscard]] virtual bool is_set() const = 0;
  /// Drops an in-code value; the environment (or the default) applies again.
  virtual void reset() = 0;

protected:
  knob_base(std::string name, std::string env, std::string default_text, std::string doc, bool invalidating,
            bool secret = false)
      : name_(std::move(name)), env_(std::move(env)), doc_(std::move(doc)), default_text_(std::move(default_text)),
        invalidating_(invalidating), secret_(secret) {}

  friend class knob_snapshot;
  [[nodiscard]] virtual std::any save() const = 0;
  virtual void restore(const std::any&) = 0;

private:
  std::string name_, env_, doc_, default_text_;
  bool invalidating_;
  bool secret_;
};

/// Every knob that exists in this program, in registration order.
class knob_registry {
public:
  [[nodiscard]] COTUNE_DECL static knob_registry& instance();
  COTUNE_DECL void add(knob_base* k);
  /// Forgets a knob (called by its destructor, so that the registry never holds a dangling pointer
  /// to a knob that lived on the stack or in an unloaded plugin).
  COTUNE_DECL void remove(const knob_base* k);
  /// Throws one knob_error naming every variable whose value does not parse or is out of range, each
  /// with what it accepts; a tuning calls this before any candidate runs (and `cotune knobs --check`).
  COTUNE_DECL void check() const;

  [[nodiscard]] COTUNE_DECL std::vector<knob_base*> all() const;
  /// `ENV=value` for each cache-invalidating knob that is set to something other than its default,
  /// sorted by variable name and joined by ';'. Only such knobs count, so that registering a new knob,
  /// or setting one to its default, does not change existing keys.
  [[nodiscard]] COTUNE_DECL std::string invalidating_text() const;

private:
  mutable std::mutex mutex_;
  std::vector<knob_base*> knobs_;
};

namespace detail {

[[nodiscard]] inline std::string lower(std::string_view s) {
  std::string out(s);
  for (auto& c : out) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  return out;
}

/// Parses a knob's environment text. Booleans accept 1/true/on/yes and 0/false/off/no in any case;
/// anything else is an error (Triton reads every other text, even "2" or "enabled", as false).
template <class T>
T parse_knob(std::string_view env, std::string_view text) {
  if constexpr (std::is_same_v<T, bool>) {
    auto t = lower(text);
    if (t == "1" || t == "true" || t == "on" || t == "yes") return true;
    if (t == "0" || t == "false" || t == "off" || t == "no") return false;
    throw knob_error(fmt::format("{}='{}' is not a boolean; use one of 1/true/on/yes or 0/false/off/no", env, text));
  } else if constexpr (std::is_same_v<T, std::int64_t> || std::is_same_v<T, int>) {
    T v{};
    auto [end, ec] = std::from_chars(text.data(), text.data() + text.size(), v);
    if (ec != std::errc{} || end != text.data() + text.size())
      throw knob_error(fmt::format("{}='{}' is not an integer; use a decimal number such as 4", env, text));
    return v;
  } else if constexpr (std::is_same_v<T, double>) {
    double v{};
    auto [end, ec] = std::from_chars(text.data(), text.data() + text.size(), v);
    // from_chars accepts "inf" and "nan"; no knob means either, and NaN slips past range checks.
    if (ec != std::errc{} || end != text.data() + text.size() || !std::isfinite(v))
      throw knob_error(fmt::format("{}='{}' is not a number; use a decimal number such as 1.5", env, text));
    return v;
  } else {
    return T(text);
  }
}

template <class T>
std::string knob_text(const T& v) {
  if constexpr (std::is_same_v<T, bool>) return v ? "true" : "false";
  else if constexpr (std::is_same_v<T, double>) return double_text(v);
  else if constexpr (std::is_arithmetic_v<T>) return std::to_string(v);
  else if constexpr (std::is_same_v<T, std::optional<std::string>>) return v ? *v : std::string("(unset)");
  else return std::string(v);
}

template <class T>
constexpr const char* knob_type_name() {
  if constexpr (std::is_same_v<T, bool>) return "bool";
  else if constexpr (std::is_arithmetic_v<T> && std::is_integral_v<T>) return "int";
  else if constexpr (std::is_arithmetic_v<T>) return "float";
  else if constexpr (std::is_same_v<T, std::optional<std::string>>) return "optional string";
  else return "string";
}

} // namespace detail

/// Options of a knob besides its name and variable.
template <class T>
struct knob_spec {
  std::string name;                       ///< group.knob, e.g. "cache.dir"
  std::string env;                        ///< environment variable
  T fallback{};                           ///< default when unset
  // `{}` so that a spec may leave `doc` out under -Wextra (-Wmissing-field-initializers).
  std::string doc{};                      ///< one line for docs/knobs.md
  bool invalidating = false;              ///< hashed into every cache key when set
  std::function<T()> computed_default{};  ///< computed at each read, replaces `fallback`
  std::string default_text{};             ///< how to show a computed default
  std::function<void(const T&)> validate{}; ///< throws knob_error on an out-of-range value
  bool secret = false;                    ///< its value is never shown (tools print *** when it is set)
};

/// A typed setting. Reading gives the in-code value if one is set, else the environment variable
/// (read at each use), else the default. Setting never writes the process environment (Triton's
/// knobs do, which races with other threads and leaks into child processes).
template <class T>
class knob final : public knob_base {
public:
  using value_type = T;

  explicit knob(knob_spec<T> spec);
  ~knob() override;

  /// The current value. Throws knob_error naming the variable if its text does not parse.
  [[nodiscard]] T get() const;
  [[nodiscard]] T operator()() const { return get(); }

  /// Sets the value in code (the environment is left alone).
  void set(T v);
  void reset() override;

  /// Sets the value until the returned guard is destroyed, then restores what was there before
  /// (an earlier in-code value, or none).
  class scope {
  public:
    scope(knob& k, T v) : knob_(&k) {
      std::lock_guard lock(k.mutex_);
      previous_ = k.override_;
      if (k.validate_) k.validate_(v);
      k.override_ = std::move(v);
    }
    scope(const scope&) = delete;
    scope& operator=(const scope&) = delete;
    ~scope() {
      std::lock_guard lock(knob_->mutex_);
      knob_->override_ = std::move(previous_);
    }

  private:
    knob* knob_;
    std::optional<T> previous_;
  };
  [[nodiscard]] scope scoped(T v) { return scope(*this, std::move(v)); }

  [[nodiscard]] std::string type_name() const override;
  [[nodiscard]] std::string current_text() const override;
  [[nodiscard]] bool is_set() const override;

private:
  /// The environment's text; an empty value counts as unset (Triton reads an empty bool as false
  /// even when its default is true, spec §11.10).
  [[nodiscard]] std::optional<std::string> env_text() const;
  [[nodiscard]] std::any save() const override;
  void restore(const std::any& saved) override;

  T fallback_;
  std::function<T()> computed_;
  std::function<void(const T&)> validate_;
  mutable std::mutex mutex_;
  std::optional<T> override_;
};

// knob<T>'s members, out of the class so that the types cotune declares below are compiled once.
template <class T>
knob<T>::knob(knob_spec<T> spec)
    : knob_base(spec.name, spec.env,
                !spec.default_text.empty() ? spec.default_text : detail::knob_text(spec.fallback), spec.doc,
                spec.invalidating, spec.secret),
      fallback_(std::move(spec.fallback)), computed_(std::move(spec.computed_default)),
      validate_(std::move(spec.validate)) {
  knob_registry::instance().add(this);
}

template <class T>
knob<T>::~knob() { knob_registry::instance().remove(this); }

template <class T>
T knob<T>::get() const {
  {
    std::lock_guard lock(mutex_);
    if (override_) return *override_;
  }
  if (auto text = env_text()) {
    T v = detail::parse_knob<T>(env(), *text);
    if (validate_) validate_(v);
    return v;
  }
  return computed_ ? computed_() : fallback_;
}

template <class T>
void knob<T>::set(T v) {
  if (validate_) validate_(v);
  std::lock_guard lock(mutex_);
  override_ = std::move(v);
}

template <class T>
void knob<T>::reset() {
  std::lock_guard lock(mutex_);
  override_.reset();
}

template <class T>
std::string knob<T>::type_name() const { return detail::knob_type_name<T>(); }

template <class T>
std::string knob<T>::current_text() const { return detail::knob_text(get()); }

template <class T>
bool knob<T>::is_set() const {
  {
    std::lock_guard lock(mutex_);
    if (override_) return true;
  }
  return env_text().has_value();
}

template <class T>
std::optional<std::string> knob<T>::env_text() const {
  const char* raw = std::getenv(env().c_str());
  if (!raw || !*raw) return std::nullopt;
  return std::string(raw);
}

template <class T>
std::any knob<T>::save() const {
  std::lock_guard lock(mutex_);
  return override_;
}

template <class T>
void knob<T>::restore(const std::any& saved) {
  std::lock_guard lock(mutex_);
  // A mismatched type means another knob now lives at a saved knob's address: it had no state then.
  if (auto p = std::any_cast<std::optional<T>>(&saved)) override_ = *p;
  else override_.reset();
}

// The knob types cotune declares, compiled once with COTUNE_SEPARATE_COMPILATION (in knob.ipp).
#if !COTUNE_HEADER_ONLY
extern template class knob<bool>;
extern template class knob<int>;
extern template class knob<std::int64_t>;
extern template class knob<double>;
extern template class knob<std::string>;
extern template class knob<std::optional<std::string>>;
#endif

/// Saves the in-code values of every knob and restores them on destruction (tests, plugins). Knobs
/// created after the snapshot had no in-code value then, so they lose theirs.
class knob_snapshot {
public:
  COTUNE_DECL knob_snapshot();
  knob_snapshot(const knob_snapshot&) = delete;
  knob_snapshot& operator=(const knob_snapshot&) = delete;
  COTUNE_DECL ~knob_snapshot();

private:
  std::vector<std::pair<knob_base*, std::any>> saved_;
};

/// The process's one instance of knob group `G`, made on first use. Every group is declared the same
/// way: a struct `<area>_knob_group` of `knob<T>` members, an accessor `<area>_knobs()` that returns
/// `knob_group<<area>_knob_group>()`, and a `detail::<area>_knobs_registered` reference to it, so that
/// the registry lists the group (and cache keys see its invalidating knobs) from static initialisation
/// on. `knobs()` (core), `search_knobs()`, `batch::job_knobs()`, `cuda::cuda_knobs()`, `hip::hip_knobs()`
/// and `redis::redis_knobs()` are the groups. The core, search and job groups, which cotune_separate's
/// library holds, define the accessor and the reference in their .ipp file, so that with
/// COTUNE_SEPARATE_COMPILATION only the impl/src.hpp file emits them; header-only, they have no
/// reference: each file that instantiates a tuner registers them instead (tune/process_setup.hpp), so
/// that a file that includes them and tunes nothing emits no group's code.
template <class G>
[[nodiscard]] G& knob_group() {
  static G group;
  return group;
}

} // namespace cotune

#if COTUNE_HEADER_ONLY
#include <cotune/knobs/knob.ipp>
#endif
