#pragma once
/// \file `cotune::config_space`: candidate lists as cartesian products of axes, filtered by predicates.

#include <algorithm>
#include <functional>
#include <string>
#include <utility>
#include <vector>

#include <fmt/format.h>

#include <cotune/core/config.hpp>
#include <cotune/core/errors.hpp>

namespace cotune {

/// Builds a candidate list: the product of named parameter axes and launch-option axes, in the order
/// the axes were added (the last axis varies fastest), keeping the configs every predicate accepts.
///
///     auto configs = config_space{}
///         .axis("BLOCK", {16, 32, 64}).axis("UNROLL", {1, 2, 4})
///         .num_warps({4, 8})
///         .where([](const config& c) { return c.at("BLOCK").as_int() * c.at("UNROLL").as_int() <= 128; })
///         .build();
class config_space {
public:
  /// Adds a parameter axis.
  config_space& axis(std::string name, std::vector<value> values) {
    if (values.empty()) throw error(fmt::format("config_space: axis '{}' has no values", name));
    if (!is_identifier(name))
      throw error(fmt::format("config_space: axis name '{}' is not a C identifier", name));
    refuse_duplicate(name);
    const std::size_t n = values.size();
    axes_.push_back({name, [vals = std::move(values), name](config& c, std::size_t i) { c.set(name, vals[i]); }, n});
    return *this;
  }
  config_space& num_warps(std::vector<int> values) { return launch_axis("num_warps", std::move(values), &launch_options::num_warps); }
  config_space& num_stages(std::vector<int> values) { return launch_axis("num_stages", std::move(values), &launch_options::num_stages); }
  config_space& num_ctas(std::vector<int> values) { return launch_axis("num_ctas", std::move(values), &launch_options::num_ctas); }
  /// Keeps only the configs for which `predicate` returns true.
  config_space& where(std::function<bool(const config&)> predicate) {
    predicates_.push_back(std::move(predicate));
    return *this;
  }

  /// Number of combinations before filtering.
  [[nodiscard]] std::size_t product_size() const noexcept {
    std::size_t n = axes_.empty() ? 0 : 1;
    for (const auto& a : axes_) n *= a.size;
    return n;
  }

  /// The filtered product. Throws if the predicates reject every combination.
  [[nodiscard]] std::vector<config> build() const {
    std::vector<config> out;
    const std::size_t total = product_size();
    std::vector<std::size_t> index(axes_.size(), 0);
    for (std::size_t n = 0; n < total; ++n) {
      config c;
      for (std::size_t a = 0; a < axes_.size(); ++a) axes_[a].apply(c, index[a]);
      if (std::all_of(predicates_.begin(), predicates_.end(), [&](const auto& p) { return p(c); }))
        out.push_back(std::move(c));
      for (std::size_t a = axes_.size(); a-- > 0;) {
        if (++index[a] < axes_[a].size) break;
        index[a] = 0;
      }
    }
    if (out.empty() && total > 0)
      throw error(fmt::format("config_space: the predicates rejected all {} combinations", total));
    return out;
  }

private:
  struct axis_entry {
    std::string name;
    std::function<void(config&, std::size_t)> apply;
    std::size_t size;
  };

  // A second axis of the same name would multiply the product while overwriting the first axis's
  // values: every candidate would appear several times.
  void refuse_duplicate(const std::string& name) const {
    for (const auto& a : axes_)
      if (a.name == name) throw error(fmt::format("config_space: axis '{}' is given twice", name));
  }

  template <class Member>
  config_space& launch_axis(const char* name, std::vector<int> values, Member member) {
    if (values.empty()) throw error(fmt::format("config_space: axis '{}' has no values", name));
    refuse_duplicate(name);
    const std::size_t n = values.size();
    axes_.push_back({name, [vals = std::move(values), member](config& c, std::size_t i) {
                       auto launch = c.launch();
                       launch.*member = vals[i];
                       c.with_launch(launch);
                     }, n});
    return *this;
  }

  std::vector<axis_entry> axes_;
  std::vector<std::function<bool(const config&)>> predicates_;
};

} // namespace cotune
