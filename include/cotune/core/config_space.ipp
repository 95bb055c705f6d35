#pragma once
/// \file The bodies of core/config_space.hpp (compiled once with COTUNE_SEPARATE_COMPILATION, see
/// detail/config.hpp).

#include <algorithm>
#include <functional>
#include <string>
#include <utility>
#include <vector>

#include <fmt/core.h>

#include <cotune/core/config_space.hpp>
#include <cotune/core/errors.hpp>

namespace cotune {

COTUNE_DECL config_space& config_space::axis(std::string name, std::vector<value> values) {
  if (values.empty()) throw error(fmt::format(COTUNE_FMT("config_space: axis '{}' has no values"), name));
  if (!is_identifier(name))
    throw error(fmt::format(COTUNE_FMT("config_space: axis name '{}' is not a C identifier"), name));
  refuse_duplicate(name);
  const std::size_t n = values.size();
  axes_.push_back({name, [vals = std::move(values), name](config& c, std::size_t i) { c.set(name, vals[i]); }, n});
  return *this;
}

COTUNE_DECL config_space& config_space::categorical(std::string name, std::vector<value> values) {
  axis(name, std::move(values));
  kinds_[std::move(name)] = param_kind::categorical;
  return *this;
}

template <class Member>
config_space& config_space::launch_axis(const char* name, std::vector<int> values, Member member) {
  if (values.empty()) throw error(fmt::format(COTUNE_FMT("config_space: axis '{}' has no values"), name));
  refuse_duplicate(name);
  const std::size_t n = values.size();
  axes_.push_back({name, [vals = std::move(values), member](config& c, std::size_t i) {
                     auto launch = c.launch();
                     launch.*member = vals[i];
                     c.with_launch(launch);
                   }, n});
  return *this;
}

COTUNE_DECL config_space& config_space::num_warps(std::vector<int> values) {
  return launch_axis("num_warps", std::move(values), &launch_options::num_warps);
}
COTUNE_DECL config_space& config_space::num_stages(std::vector<int> values) {
  return launch_axis("num_stages", std::move(values), &launch_options::num_stages);
}
COTUNE_DECL config_space& config_space::num_ctas(std::vector<int> values) {
  return launch_axis("num_ctas", std::move(values), &launch_options::num_ctas);
}

COTUNE_DECL void config_space::refuse_derived(const std::string& name) const {
  if (!is_identifier(name))
    throw error(fmt::format(COTUNE_FMT("config_space: derived name '{}' is not a C identifier"), name));
  for (const auto& a : axes_)
    if (a.name == name || (name == "threads" && a.name == "threads_per_block"))
      throw error(fmt::format(COTUNE_FMT("config_space: '{}' is both an axis and derived; drop one of them"), name));
  for (const auto& d : derived_)
    if (d.name == name) throw error(fmt::format(COTUNE_FMT("config_space: '{}' is derived twice"), name));
}

COTUNE_DECL std::vector<config> config_space::build() const {
  std::vector<config> out;
  const std::size_t total = product_size();
  std::vector<std::size_t> index(axes_.size(), 0);
  for (std::size_t n = 0; n < total; ++n) {
    config c;
    for (std::size_t a = 0; a < axes_.size(); ++a) axes_[a].apply(c, index[a]);
    for (const auto& d : derived_) apply_derived(c, d);
    if (std::all_of(predicates_.begin(), predicates_.end(), [&](const auto& p) { return p(c); }))
      out.push_back(std::move(c));
    for (std::size_t a = axes_.size(); a-- > 0;) {
      if (++index[a] < axes_[a].size) break;
      index[a] = 0;
    }
  }
  if (out.empty() && total > 0)
    throw error(fmt::format(COTUNE_FMT("config_space: the predicates rejected all {} combinations"), total));
  return out;
}

COTUNE_DECL void config_space::refuse_duplicate(const std::string& name) const {
  for (const auto& a : axes_)
    if (a.name == name) throw error(fmt::format(COTUNE_FMT("config_space: axis '{}' is given twice"), name));
}

COTUNE_DECL void config_space::apply_derived(config& c, const derived_entry& d) {
  const value v = d.fn(c);
  auto launch_int = [&]() -> int {
    if (!v.is_int() || !std::in_range<int>(v.as_int()) || v.as_int() < (d.name == "maxnreg" ? 1 : 0))
      throw error(
          fmt::format(COTUNE_FMT("config_space: derived launch option '{}' is {} for config {{{}}}; it must be a "
                                 "non-negative int"),
                      d.name, v.text(), c.text()));
    return static_cast<int>(v.as_int());
  };
  auto launch = c.launch();
  auto block = [&](int block_dims::*dim) {
    const int n = launch_int();
    if (n < 1)
      throw error(
          fmt::format(COTUNE_FMT("config_space: derived '{}' is {} for config {{{}}}; a block dimension must be >= 1"),
                      d.name, n, c.text()));
    block_dims b = launch.block.value_or(block_dims{});
    b.*dim = n;
    launch.block = b;
  };
  if (d.name == "num_warps") launch.num_warps = launch_int();
  else if (d.name == "num_stages") launch.num_stages = launch_int();
  else if (d.name == "num_ctas") launch.num_ctas = launch_int();
  else if (d.name == "maxnreg") launch.maxnreg = launch_int();
  else if (d.name == "threads_per_block" || d.name == "threads") launch.threads_per_block = launch_int();
  else if (d.name == "block_x") block(&block_dims::x);
  else if (d.name == "block_y") block(&block_dims::y);
  else if (d.name == "block_z") block(&block_dims::z);
  else {
    c.set(d.name, v);
    return;
  }
  c.with_launch(launch);
}

} // namespace cotune
