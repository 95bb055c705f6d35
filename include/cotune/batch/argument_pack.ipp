#pragma once
/// \file The bodies of batch/argument_pack.hpp (compiled once with COTUNE_SEPARATE_COMPILATION, see
/// detail/config.hpp).

#include <algorithm>
#include <cstring>
#include <random>
#include <type_traits>
#include <utility>

#include <fmt/core.h>

#include <cotune/detail/files.hpp>
#include <cotune/batch/argument_pack.hpp>

namespace cotune::batch {

template <class Pick, class F>
void argument_pack::for_each_buffer(Pick pick, F&& f) const {
  if (!s_) return;
  for (std::size_t i = 0; i < s_->args.size(); ++i)
    if (s_->args[i].buffer && pick(s_->args[i])) f(s_->buffers[i].data.get(), s_->buffers[i].size);
}

COTUNE_DECL std::string key_text(const std::vector<argument>& args) {
  std::string out;
  auto add = [&](const std::string& part) { out += (out.empty() ? "" : ", ") + part; };
  for (const auto& a : args) {
    if (a.buffer)
      add(a.key ? fmt::format(COTUNE_FMT("{}: {}[{}]"), a.name, to_string(a.type), a.extent)
                : fmt::format(COTUNE_FMT("{}: {}"), a.name, to_string(a.type)));
    else if (a.key)
      add(fmt::format(COTUNE_FMT("{}={}"), a.name, a.scalar.text()));
  }
  return out;
}

COTUNE_DECL std::string host_trampoline(std::string_view entry, const std::vector<argument>& args) {
  std::string call;
  for (std::size_t i = 0; i < args.size(); ++i) {
    const auto& a = args[i];
    call += fmt::format(COTUNE_FMT("{}*({}{}*)a[{}]"), i ? ", " : "", c_type(a.type), a.buffer ? "*" : "", i);
  }
  return fmt::format(COTUNE_FMT("\n// cotune job trampoline: one void* slot per argument, pointing at its value\n"
                                "extern \"C\" void cotune_job_entry(void** a) {{ (void)a; {}({}); }}\n"),
                     entry, call);
}

COTUNE_DECL std::string instance_key_text(std::string_view result_key) {
  const std::string prefix = std::string(pack_argument_name) + ": ";
  if (result_key.starts_with(prefix)) result_key.remove_prefix(prefix.size());
  return std::string(result_key);
}

COTUNE_DECL argument_pack::argument_pack(std::vector<argument> args) : s_(std::make_shared<storage>()) {
  auto& s = *s_;
  s.args = std::move(args);
  s.key_text = batch::key_text(s.args);
  const std::size_t n = s.args.size();
  s.buffers.resize(n);
  s.pointers.assign(n, nullptr);
  s.scalars.assign(n, 0);
  s.slots.assign(n, nullptr);
  for (std::size_t i = 0; i < n; ++i) {
    auto& a = s.args[i];
    if (a.buffer) {
      const std::size_t bytes = a.extent * size_of(a.type);
      s.buffers[i] = aligned_bytes(bytes);
      s.pointers[i] = s.buffers[i].data.get();
      fill(a, s.buffers[i].data.get(), bytes);
      s.slots[i] = &s.pointers[i];
    } else {
      store_scalar(a, &s.scalars[i]);
      s.slots[i] = &s.scalars[i];
    }
  }
}

COTUNE_DECL void argument_pack::zero() const {
  for_each_buffer([](const argument& a) { return a.reset; },
                  [](std::byte* p, std::size_t bytes) { std::memset(p, 0, bytes); });
}

COTUNE_DECL argument_pack::snapshot_type argument_pack::snapshot() const {
  snapshot_type out;
  for_each_buffer([](const argument& a) { return a.restore; },
                  [&](std::byte* p, std::size_t bytes) { out.emplace_back(reinterpret_cast<const char*>(p), bytes); });
  return out;
}

COTUNE_DECL void argument_pack::restore(const snapshot_type& snap) const {
  std::size_t k = 0;
  for_each_buffer([](const argument& a) { return a.restore; },
                  [&](std::byte* p, std::size_t bytes) {
                    if (k >= snap.size()) return;
                    const auto& saved = snap[k++];
                    std::memcpy(p, saved.data(), std::min(bytes, saved.size()));
                  });
}

template <class T>
void argument_pack::fill_as(const argument& a, std::byte* p, std::size_t count) {
  T* out = reinterpret_cast<T*>(p);
  if (a.fill == fill_kind::zeros) std::fill(out, out + count, T{});
  else if (a.fill == fill_kind::ones) std::fill(out, out + count, T{1});
  else {
    // Floating: uniform in [-1, 1); integers: uniform in [0, 100) (small enough not to overflow sums).
    std::mt19937_64 rng(a.seed);
    if constexpr (std::is_floating_point_v<T>) {
      std::uniform_real_distribution<T> d(T(-1), T(1));
      for (std::size_t i = 0; i < count; ++i) out[i] = d(rng);
    } else {
      std::uniform_int_distribution<int> d(0, 99);
      for (std::size_t i = 0; i < count; ++i) out[i] = static_cast<T>(d(rng));
    }
  }
}

COTUNE_DECL void argument_pack::fill_half(const argument& a, std::byte* p, std::size_t count) {
  auto* out = reinterpret_cast<std::uint16_t*>(p);
  if (a.fill != fill_kind::random) {
    std::fill(out, out + count, a.fill == fill_kind::ones ? exact_half_bits(1.0f) : std::uint16_t{0});
    return;
  }
  std::mt19937_64 rng(a.seed);
  std::uniform_int_distribution<int> d(-1024, 1023);
  for (std::size_t i = 0; i < count; ++i) out[i] = exact_half_bits(static_cast<float>(d(rng)) / 1024.0f);
}

COTUNE_DECL void argument_pack::fill(const argument& a, std::byte* p, std::size_t bytes) {
  if (a.fill == fill_kind::file) {
    auto content = cotune::detail::read_file(a.file);
    if (!content)
      throw error(
          fmt::format(COTUNE_FMT("argument '{}': cannot read the fill file '{}'; give a readable file of {} bytes "
                                 "({} {} elements)"),
                      a.name, a.file.string(), bytes, a.extent, to_string(a.type)));
    if (content->size() != bytes)
      throw error(
          fmt::format(COTUNE_FMT("argument '{}': the fill file '{}' holds {} bytes, but {} {} elements take {}; "
                                 "write exactly extent * element size bytes"),
                      a.name, a.file.string(), content->size(), a.extent, to_string(a.type), bytes));
    std::memcpy(p, content->data(), bytes);
    return;
  }
  const std::size_t count = a.extent;
  switch (a.type) {
  case element_type::float16: fill_half(a, p, count); break;
  case element_type::float32: fill_as<float>(a, p, count); break;
  case element_type::float64: fill_as<double>(a, p, count); break;
  case element_type::int8: fill_as<std::int8_t>(a, p, count); break;
  case element_type::int16: fill_as<std::int16_t>(a, p, count); break;
  case element_type::int32: fill_as<std::int32_t>(a, p, count); break;
  case element_type::int64: fill_as<std::int64_t>(a, p, count); break;
  case element_type::uint8: fill_as<std::uint8_t>(a, p, count); break;
  case element_type::uint16: fill_as<std::uint16_t>(a, p, count); break;
  case element_type::uint32: fill_as<std::uint32_t>(a, p, count); break;
  case element_type::uint64: fill_as<std::uint64_t>(a, p, count); break;
  }
}

template <class T>
void argument_pack::store_as(const argument& a, std::uint64_t* slot) {
  T v{};
  if constexpr (std::is_floating_point_v<T>) {
    v = static_cast<T>(a.scalar.as_double());
  } else {
    if (!a.scalar.is_int())
      throw error(fmt::format(COTUNE_FMT("argument '{}': {} is not an integer, but the scalar is {}"), a.name,
                              a.scalar.text(), to_string(a.type)));
    const std::int64_t n = a.scalar.as_int();
    if (!std::in_range<T>(n))
      throw error(fmt::format(COTUNE_FMT("argument '{}': {} does not fit in {}"), a.name, n, to_string(a.type)));
    v = static_cast<T>(n);
  }
  std::memcpy(slot, &v, sizeof v);
}

COTUNE_DECL void argument_pack::store_scalar(const argument& a, std::uint64_t* slot) {
  switch (a.type) {
  case element_type::float16:
    throw error(
        fmt::format(COTUNE_FMT("argument '{}': a float16 scalar is not supported; pass it as float32"), a.name));
  case element_type::float32: store_as<float>(a, slot); break;
  case element_type::float64: store_as<double>(a, slot); break;
  case element_type::int8: store_as<std::int8_t>(a, slot); break;
  case element_type::int16: store_as<std::int16_t>(a, slot); break;
  case element_type::int32: store_as<std::int32_t>(a, slot); break;
  case element_type::int64: store_as<std::int64_t>(a, slot); break;
  case element_type::uint8: store_as<std::uint8_t>(a, slot); break;
  case element_type::uint16: store_as<std::uint16_t>(a, slot); break;
  case element_type::uint32: store_as<std::uint32_t>(a, slot); break;
  case element_type::uint64: store_as<std::uint64_t>(a, slot); break;
  }
}

} // namespace cotune::batch
