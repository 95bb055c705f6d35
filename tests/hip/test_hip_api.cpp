// Tests for cotune/hip/hip_api.hpp and hiprtc_api.hpp: cotune's own declarations of the HIP functions
// it loads are checked against the real HIP headers (where installed: Debian's libamdhip64-dev in CI),
// and the runtime loads, or says exactly why not, on a machine without an AMD GPU.

#include <cstddef>
#include <string>
#include <tuple>
#include <type_traits>

#include <catch2/catch.hpp>

#include <cotune/hip/availability.hpp>
#include <cotune/hip/device.hpp>
#include <cotune/hip/hip_api.hpp>
#include <cotune/hip/hiprtc_api.hpp>

#ifdef COTUNE_TEST_HIP_HEADERS
#include <hip/hip_runtime_api.h>
#include <hip/hiprtc.h>
#endif

// Not `hip`: HIP's own headers declare a namespace of that name.
namespace chip = cotune::hip;

#ifdef COTUNE_TEST_HIP_HEADERS
namespace {

// Whether cotune's type `Ours` passes exactly as HIP's `Theirs` does: the same type; an int for an
// enum of int's size; void* for a pointer to one of HIP's opaque handle structs (recursively through
// pointers, so hip_module* matches hipModule_t*); and functions whose results and parameters all match.
template <class Ours, class Theirs>
struct abi_same : std::is_same<Ours, Theirs> {};
template <class Theirs>
  requires std::is_enum_v<Theirs>
struct abi_same<int, Theirs> : std::bool_constant<sizeof(Theirs) == sizeof(int)> {};
template <class Theirs>
  requires std::is_class_v<Theirs>
struct abi_same<void, Theirs> : std::true_type {}; // an opaque handle: HIP's ihipStream_t and friends
template <class Ours, class Theirs>
struct abi_same<Ours*, Theirs*> : abi_same<Ours, Theirs> {};
template <class Ours, class Theirs>
struct abi_same<const Ours*, const Theirs*> : abi_same<Ours, Theirs> {};
template <>
struct abi_same<chip::device_properties, hipDeviceProp_t> : std::true_type {}; // checked field by field below
template <>
struct abi_same<chip::ipc_mem_handle, hipIpcMemHandle_t>
    : std::bool_constant<sizeof(chip::ipc_mem_handle) == sizeof(hipIpcMemHandle_t) &&
                         alignof(chip::ipc_mem_handle) == alignof(hipIpcMemHandle_t)> {};
template <class Ours, class Theirs>
struct all_abi_same : std::false_type {}; // parameter lists of different lengths
template <class... A1, class... A2>
  requires(sizeof...(A1) == sizeof...(A2))
struct all_abi_same<std::tuple<A1...>, std::tuple<A2...>> : std::bool_constant<(abi_same<A1, A2>::value && ...)> {};
template <class R1, class... A1, class R2, class... A2>
struct abi_same<R1(A1...), R2(A2...)>
    : std::bool_constant<abi_same<R1, R2>::value && all_abi_same<std::tuple<A1...>, std::tuple<A2...>>::value> {};

// The X-macro lists name cotune's types unqualified, as in their own namespace.
using namespace cotune::hip;

#define COTUNE_CHECK_HIP(member, name, type)                                                                \
  static_assert(abi_same<type, std::remove_pointer_t<decltype(&::name)>>::value,                           \
                "cotune's declaration of " #name " does not match the HIP headers");
COTUNE_HIP_RUNTIME_FUNCTIONS(COTUNE_CHECK_HIP)
COTUNE_HIPRTC_FUNCTIONS(COTUNE_CHECK_HIP)
#undef COTUNE_CHECK_HIP
// Overloaded in C++: the C function, named by its signature in the header (the cast fails to compile
// if the header has no such overload).
#define COTUNE_CHECK_OVERLOADED(member, name, type)                                                         \
  static_assert(abi_same<type, hipError_t(void**, size_t)>::value &&                                       \
                    static_cast<hipError_t (*)(void**, size_t)>(&::name) != nullptr,                       \
                "cotune's declaration of " #name " does not match the HIP headers");
COTUNE_HIP_OVERLOADED_FUNCTIONS(COTUNE_CHECK_OVERLOADED)
#undef COTUNE_CHECK_OVERLOADED

// The fields of hipDeviceProp_t cotune reads lie where HIP puts them, and the runtime's writes fit.
#define COTUNE_CHECK_FIELD(ours, theirs)                                                                    \
  static_assert(offsetof(chip::device_properties, ours) == offsetof(hipDeviceProp_t, theirs) &&             \
                sizeof(chip::device_properties::ours) == sizeof(hipDeviceProp_t::theirs), #theirs);
COTUNE_CHECK_FIELD(name, name)
COTUNE_CHECK_FIELD(total_global_mem, totalGlobalMem)
COTUNE_CHECK_FIELD(shared_mem_per_block, sharedMemPerBlock)
COTUNE_CHECK_FIELD(regs_per_block, regsPerBlock)
COTUNE_CHECK_FIELD(warp_size, warpSize)
COTUNE_CHECK_FIELD(max_threads_per_block, maxThreadsPerBlock)
COTUNE_CHECK_FIELD(multi_processor_count, multiProcessorCount)
COTUNE_CHECK_FIELD(l2_cache_size, l2CacheSize)
COTUNE_CHECK_FIELD(arch_flags, arch)
COTUNE_CHECK_FIELD(pci_domain_id, pciDomainID)
COTUNE_CHECK_FIELD(pci_bus_id, pciBusID)
COTUNE_CHECK_FIELD(pci_device_id, pciDeviceID)
COTUNE_CHECK_FIELD(gcn_arch_name, gcnArchName)
#undef COTUNE_CHECK_FIELD
static_assert(sizeof(chip::device_properties) >= sizeof(hipDeviceProp_t));

// The constants cotune passes.
static_assert(chip::hip_success == hipSuccess && chip::hip_error_out_of_memory == hipErrorOutOfMemory &&
              chip::hip_error_no_device == hipErrorNoDevice && chip::hip_error_not_ready == hipErrorNotReady);
static_assert(chip::hip_stream_non_blocking == hipStreamNonBlocking &&
              chip::hip_stream_capture_mode_relaxed == hipStreamCaptureModeRelaxed);
static_assert(chip::hip_func_attribute_max_threads_per_block == HIP_FUNC_ATTRIBUTE_MAX_THREADS_PER_BLOCK &&
              chip::hip_func_attribute_shared_size_bytes == HIP_FUNC_ATTRIBUTE_SHARED_SIZE_BYTES &&
              chip::hip_func_attribute_local_size_bytes == HIP_FUNC_ATTRIBUTE_LOCAL_SIZE_BYTES &&
              chip::hip_func_attribute_num_regs == HIP_FUNC_ATTRIBUTE_NUM_REGS);
static_assert(chip::hiprtc_success == HIPRTC_SUCCESS);

// The check itself catches a mismatch (a control: a wrong parameter and a wrong arity fail it).
static_assert(!abi_same<chip::hip_error(int*), std::remove_pointer_t<decltype(&::hipSetDevice)>>::value);
static_assert(!abi_same<chip::hip_error(chip::hip_event), std::remove_pointer_t<decltype(&::hipEventElapsedTime)>>::value);

} // namespace

TEST_CASE("cotune's HIP declarations match the installed HIP headers", "[hip][hip_api]") {
  SUCCEED("checked at compile time against HIP " << HIP_VERSION_MAJOR << "." << HIP_VERSION_MINOR);
}
#else
TEST_CASE("cotune's HIP declarations match the installed HIP headers", "[hip][hip_api]") {
  WARN("skipped: no HIP headers at build time (install libamdhip64-dev, or configure with -DCOTUNE_WITH_HIP=ON "
       "to require them)");
}
#endif

TEST_CASE("the HIP runtime loads, or availability says exactly why not", "[hip][hip_api]") {
  const auto report = chip::availability();
  INFO(report.text());
  if (!report.runtime_loaded) {
    CHECK_THAT(report.message, Catch::Contains("cannot load the HIP runtime"));
    CHECK_THAT(report.message, Catch::Contains("libamdhip64.so.6"));
    CHECK_THAT(report.message, Catch::Contains("COTUNE_LIBAMDHIP64_PATH"));
    return;
  }
  CHECK_FALSE(report.runtime_version.empty());
  if (report.device_count == 0) {
    CHECK_FALSE(report.can_run());
    CHECK_THAT(report.message, Catch::Contains("no devices"));
    CHECK(chip::devices().empty());
    WARN("no AMD GPU here: " << report.message);
  }
}

TEST_CASE("a library that is not the HIP runtime is refused with every path tried", "[hip][hip_api]") {
  std::string why;
  CHECK(chip::runtime_library::open({"/nonexistent/libamdhip64.so.6", "libm.so.6"}, why) == nullptr);
  CHECK_THAT(why, Catch::Contains("/nonexistent/libamdhip64.so.6"));
  CHECK_THAT(why, Catch::Contains("libm.so.6: lacks hipInit"));
  std::string rtc_why;
  CHECK(chip::hiprtc_library::open({"libm.so.6"}, rtc_why) == nullptr);
  CHECK_THAT(rtc_why, Catch::Contains("lacks hiprtcVersion"));
  CHECK_THAT(rtc_why, Catch::Contains("COTUNE_LIBHIPRTC_PATH"));
}

TEST_CASE("a missing HIP runtime is reported, never thrown, and means no devices", "[hip][hip_api]") {
  auto scope = chip::hip_knobs().libamdhip64_path.scoped("/nonexistent/libamdhip64.so.6");
  CHECK(chip::try_runtime() == nullptr);
  CHECK(chip::devices().empty());
  const auto report = chip::availability();
  CHECK_FALSE(report.runtime_loaded);
  CHECK_THAT(report.message, Catch::Contains("/nonexistent/libamdhip64.so.6"));
}
