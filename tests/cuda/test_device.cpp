// Tests of cotune::cuda::device.

#include <catch2/catch.hpp>

#include <cotune/cuda/device.hpp>

namespace cuda = cotune::cuda;

TEST_CASE("a hand-made description names its architecture", "[cuda][device]") {
  const cuda::device d{.cc = {9, 0}};
  CHECK(d.arch() == "sm_90");
  CHECK(cuda::device{.cc = {12, 1}}.arch() == "sm_121");
  CHECK(d.max_shared_per_block == 48 * 1024);
  static_assert(cuda::compute_capability{9, 0} > cuda::compute_capability{8, 9});
}

TEST_CASE("devices of one model are interchangeable whatever their ordinal", "[cuda][device]") {
  cuda::device a{.ordinal = 0, .cc = {9, 0}, .name = "NVIDIA H200", .sm_count = 132, .l2_bytes = 62914560,
                 .pci_bus_id = "0000:19:00.0"};
  auto b = a;
  b.ordinal = 1;
  b.pci_bus_id = "0000:3b:00.0";
  CHECK(cuda::interchangeable(a, b));
  CHECK(a != b);
  auto c = b;
  c.sm_count = 114; // an H100 PCIe
  CHECK_FALSE(cuda::interchangeable(a, c));
}

TEST_CASE("real devices are described from the driver", "[cuda][device][gpu]") {
  auto all = cuda::devices();
  if (all.empty()) {
    WARN("skipped: no CUDA device here");
    return;
  }
  for (const auto& d : all) {
    INFO(d.name << " " << d.arch());
    CHECK_FALSE(d.name.empty());
    CHECK(d.cc.major >= 5);
    CHECK(d.sm_count > 0);
    CHECK(d.l2_bytes > 0);
    CHECK(d.memory_bytes > 0);
    CHECK(d.warp_size == 32);
    CHECK(d.max_threads_per_block >= 1024);
    CHECK(d.max_shared_per_block_optin >= d.max_shared_per_block);
    CHECK(d.pci_bus_id.size() == 12);
  }
  CHECK(all.front().ordinal == 0);
}
