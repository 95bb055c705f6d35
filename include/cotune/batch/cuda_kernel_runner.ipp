#pragma once
/// \file The bodies of batch/cuda_kernel_runner.hpp's device_argument_pack (compiled once with
/// COTUNE_SEPARATE_COMPILATION, by impl/cuda_jobs_src.hpp, with the CUDA tuners' jobs).

#include <span>
#include <utility>

#include <fmt/core.h>

#include <cotune/batch/cuda_kernel_runner.hpp>

namespace cotune::batch {

template <class Pick, class F>
void device_argument_pack::for_each(Pick pick, F&& f) const {
  if (!s_) return;
  for (std::size_t i = 0; i < s_->args.size(); ++i)
    if (s_->args[i].buffer && pick(s_->args[i]) && s_->buffers[i].size() > 0) f(s_->buffers[i]);
}

COTUNE_DECL device_argument_pack::device_argument_pack(std::vector<argument> args, std::size_t instance_index,
                                                       const cuda::device& d)
    : s_(std::make_shared<storage>()) {
  auto& s = *s_;
  s.args = std::move(args);
  s.key_text = batch::key_text(s.args);
  s.instance = instance_index;
  s.device = d;
  const std::size_t n = s.args.size();
  s.buffers.resize(n);
  s.pointers.assign(n, 0);
  s.scalars.assign(n, 0);
  s.params.assign(n + 1, nullptr);
  std::vector<std::byte> staging;
  for (std::size_t i = 0; i < n; ++i) {
    const auto& a = s.args[i];
    if (a.buffer) {
      const std::size_t bytes = a.extent * size_of(a.type);
      staging.resize(bytes);
      argument_pack::fill_host(a, staging.data(), bytes);
      try {
        s.buffers[i] = cuda::device_buffer<std::byte>(d, std::span<const std::byte>(staging));
      } catch (const error& e) {
        throw error(fmt::format(COTUNE_FMT("argument '{}' ({} {} elements): {}"), a.name, a.extent, to_string(a.type),
                                e.what()));
      }
      s.pointers[i] = s.buffers[i].data();
      s.params[i] = &s.pointers[i];
    } else {
      argument_pack::store_scalar_value(a, &s.scalars[i]);
      s.params[i] = &s.scalars[i]; // little-endian: the low bytes hold the C value
    }
  }
}

COTUNE_DECL std::vector<std::byte> device_argument_pack::copy_to_host(std::size_t i) const {
  const auto& b = s_->buffers.at(i);
  std::vector<std::byte> out(b.size());
  b.copy_to(out);
  return out;
}

COTUNE_DECL void device_argument_pack::zero() const {
  for_each([](const argument& a) { return a.reset; }, [](const cuda::device_buffer<std::byte>& b) { b.span().zero(); });
}

COTUNE_DECL device_argument_pack::snapshot_type device_argument_pack::snapshot() const {
  snapshot_type out;
  for_each([](const argument& a) { return a.restore; },
           [&](const cuda::device_buffer<std::byte>& b) { out.push_back(b.snapshot()); });
  return out;
}

COTUNE_DECL void device_argument_pack::restore(const snapshot_type& snap) const {
  std::size_t k = 0;
  for_each([](const argument& a) { return a.restore; }, [&](const cuda::device_buffer<std::byte>& b) {
    if (k < snap.size()) b.span().restore(snap[k++]);
  });
}

} // namespace cotune::batch
