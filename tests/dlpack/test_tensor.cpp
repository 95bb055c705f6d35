// Tests of the DLPack tensors (cotune/dlpack/): DLTensors built by hand as a host kernel's arguments
// (key, hooks, every refusal), the CUDA tensor's checks without a device, and a CUDA tuning over
// cuMemAlloc'd memory as [gpu] tests that skip without a device. PyTorch's tensors are checked on a GPU
// machine by scripts/gpu-dlpack-torch.

#include <array>
#include <cstdint>
#include <cstring>
#include <string>
#include <type_traits>
#include <vector>

#include <catch2/catch.hpp>

#include <cotune/cotune.hpp>
#include <cotune/dlpack/dlpack.hpp>
#if defined(COTUNE_HAS_CUDA)
#include <cotune/cuda/cuda.hpp>
#endif
#if defined(COTUNE_HAS_HIP)
#include <cotune/hip/hip.hpp>
#endif

#include "../support/temp_dir.hpp"

namespace dlpack = cotune::dlpack;
using Catch::Matchers::Contains;

namespace {

/// A DLTensor over `data` with `shape` (and `strides`, if any), built as a framework would.
template <class T>
DLTensor tensor_over(T* data, std::vector<std::int64_t>& shape, DLDataType type,
                     DLDevice device = {kDLCPU, 0}, std::int64_t* strides = nullptr) {
  DLTensor t{};
  t.data = const_cast<void*>(static_cast<const void*>(data));
  t.device = device;
  t.ndim = static_cast<int>(shape.size());
  t.dtype = type;
  t.shape = shape.data();
  t.strides = strides;
  t.byte_offset = 0;
  return t;
}

constexpr DLDataType float32{kDLFloat, 32, 1};
constexpr DLDataType int32{kDLInt, 32, 1};

cotune::bench_options quick_bench() { return {.warmup_ms = 1.0, .rep_ms = 5.0}; }

/// y[i] += a * x[i]: running it twice is seen, so restore_value is.
const char* axpy_code = R"(
extern "C" void axpy(const float* x, float* y, int n) {
  for (int i = 0; i < n; i += UNROLL)
    for (int k = 0; k < UNROLL && i + k < n; ++k) y[i + k] += 2.0f * x[i + k];
}
)";

const std::vector<cotune::config> two_configs{cotune::config{{"UNROLL", 1}}, cotune::config{{"UNROLL", 4}}};

using host_axpy = cotune::autotuner<void(dlpack::host_tensor<const float>, dlpack::host_tensor<float>, int)>;

host_axpy::options axpy_options() {
  host_axpy::options o;
  o.arg_names = {"x", "y", "n"};
  o.key = {"x"};
  o.restore_value = {"y"};
  o.bench = quick_bench();
  o.cache_results = false;
  return o;
}

} // namespace

TEST_CASE("DLPack element types have cotune's names, both ways", "[dlpack][dtype]") {
  static_assert(dlpack::dtype_name({kDLFloat, 32, 1}) == "float32");
  static_assert(dlpack::dtype_name({kDLBfloat, 16, 1}) == "bfloat16");
  static_assert(dlpack::dtype_name({kDLFloat, 32, 4}).empty()); // a vector type has no name
  static_assert(dlpack::same_dtype(dlpack::dtype_of<const float>, float32));
  static_assert(dlpack::same_dtype(dlpack::dtype_of<std::int64_t>, {kDLInt, 64, 1}));
  static_assert(dlpack::same_dtype(dlpack::dtype_of<std::uint8_t>, {kDLUInt, 8, 1}));
  CHECK(dlpack::dtype_name({kDLFloat, 16, 1}) == "float16");
  CHECK(dlpack::dtype_name({kDLInt, 8, 1}) == "int8");
  CHECK(dlpack::dtype_name({6, 8, 1}) == "bool"); // kDLBool, DLPack 0.8's code for PyTorch's bool
  CHECK(dlpack::dtype_name({kDLOpaqueHandle, 64, 1}).empty());
  CHECK_FALSE(dlpack::dtype_named("bytes").has_value());
#if defined(COTUNE_HAS_CUDA)
  static_assert(dlpack::same_dtype(dlpack::dtype_of<cotune::cuda::float16>, {kDLFloat, 16, 1}));
  static_assert(dlpack::same_dtype(dlpack::dtype_of<cotune::cuda::bfloat16>, {kDLBfloat, 16, 1}));
#endif
  // Every name is the one a span of the same C++ type puts into keys.
  for (const auto* name : {"float32", "float64", "int8", "int16", "int32", "int64", "uint8", "uint16", "uint32", "uint64"})
    CHECK(dlpack::dtype_name(*dlpack::dtype_named(name)) == name);
  CHECK(dlpack::dtype_name(dlpack::dtype_of<double>) == cotune::element_type_name<double>());
}

TEST_CASE("a host tensor is a host buffer over data + byte_offset", "[dlpack][host_tensor]") {
  static_assert(cotune::WritableBuffer<dlpack::host_tensor<float>>);
  static_assert(!cotune::WritableBuffer<dlpack::host_tensor<const float>>);
  static_assert(cotune::CheckedBuffer<dlpack::host_tensor<float>>);
  static_assert(!cotune::DeviceBoundBuffer<dlpack::host_tensor<float>>);
  static_assert(std::is_same_v<decltype(cotune::kernel_arg(std::declval<dlpack::host_tensor<float>&>())), float*>);
  static_assert(std::is_same_v<decltype(cotune::kernel_arg(std::declval<dlpack::host_tensor<>&>())), void*>);
  static_assert(std::is_same_v<dlpack::host_tensor<float>::element_type, float>);

  std::vector<float> v{1, 2, 3, 4, 5, 6, 7, 8};
  std::vector<std::int64_t> shape{2, 3};
  DLTensor t = tensor_over(v.data(), shape, float32);
  t.byte_offset = 2 * sizeof(float); // the last six elements
  dlpack::host_tensor<float> h = t;
  h.check_argument("k", 0, "x");
  CHECK(h.size() == 6);
  CHECK(h.size_bytes() == 24);
  CHECK(h.element_type_name() == "float32");
  CHECK(h.data() == v.data() + 2);
  const auto snap = h.snapshot();
  h.zero();
  CHECK(v == std::vector<float>{1, 2, 0, 0, 0, 0, 0, 0});
  h.restore(snap);
  CHECK(v == std::vector<float>{1, 2, 3, 4, 5, 6, 7, 8});
  h.poison();
  CHECK(std::isnan(v[2]));
  CHECK(v[1] == 2);

  // A 0-d tensor is one element; strides of dimensions of extent 1 do not matter (PyTorch gives any).
  std::vector<std::int64_t> none;
  CHECK(dlpack::host_tensor<float>(tensor_over(v.data(), none, float32)).size() == 1);
  std::vector<std::int64_t> column{4, 1};
  std::array<std::int64_t, 2> odd_strides{1, 99};
  dlpack::host_tensor<float> c = tensor_over(v.data(), column, float32, {kDLCPU, 0}, odd_strides.data());
  c.check_argument("k", 0, "x");
  CHECK(c.size() == 4);
  // An empty tensor may have no data.
  std::vector<std::int64_t> empty{0, 3};
  dlpack::host_tensor<float> e = tensor_over(static_cast<float*>(nullptr), empty, float32);
  e.check_argument("k", 0, "x");
  CHECK(e.size() == 0);
}

TEST_CASE("a host kernel tuned on DLTensors: key by dtype and extent, restore_value, the right result",
          "[dlpack][host_tensor][autotune]") {
  cotune_test::private_cache cache;
  host_axpy tuner{cotune::kernel_source{.name = "dlpack_axpy", .code = axpy_code, .entry = "axpy"}, two_configs,
                  axpy_options()};
  const int n = 100;
  std::vector<float> x(n), y(n, 1.0f);
  for (int i = 0; i < n; ++i) x[std::size_t(i)] = float(i);
  std::vector<std::int64_t> shape{n};
  DLTensor xt = tensor_over(x.data(), shape, float32), yt = tensor_over(y.data(), shape, float32);
  CHECK(tuner.key_text(xt, yt, n) == "x: float32[100], y: float32");

  tuner(xt, yt, n); // tunes (every run restores y), then one real launch
  CHECK(tuner.measured_tunings() == 1);
  for (int i = 0; i < n; ++i) REQUIRE(y[std::size_t(i)] == 1.0f + 2.0f * float(i));

  // A DLManagedTensor* is taken as well; the same shape is the same key.
  DLManagedTensor managed{};
  managed.dl_tensor = yt;
  tuner(xt, &managed, n);
  CHECK(tuner.measured_tunings() == 1);
  CHECK(y[3] == 1.0f + 4.0f * 3.0f);

  // Another extent is another key (2-d: the element count is the extent).
  std::vector<std::int64_t> square{5, 10};
  DLTensor x2 = tensor_over(x.data(), square, float32), y2 = tensor_over(y.data(), square, float32);
  CHECK(tuner.key_text(x2, y2, 50) == "x: float32[50], y: float32");
  tuner(x2, y2, 50);
  CHECK(tuner.measured_tunings() == 2);
}

TEST_CASE("an untyped tensor puts its dtype into the key at run time", "[dlpack][host_tensor][autotune]") {
  using tuner_t = cotune::autotuner<void(dlpack::host_tensor<>, int)>;
  cotune_test::private_cache cache;
  const char* code = R"(extern "C" void fill(void* p, int n) { (void)p; (void)n; for (int i = 0; i < WORK; ++i) {} })";
  tuner_t::options o{.arg_names = {"p", "n"}, .key = {"p"}};
  o.bench = quick_bench();
  o.cache_results = false;
  tuner_t tuner{cotune::kernel_source{.name = "dlpack_fill", .code = code, .entry = "fill"},
                {cotune::config{{"WORK", 1}}, cotune::config{{"WORK", 2}}}, o};
  std::vector<float> f(16);
  std::vector<std::int32_t> i(16);
  std::vector<std::int64_t> shape{16};
  DLTensor ft = tensor_over(f.data(), shape, float32), it = tensor_over(i.data(), shape, int32);
  CHECK(tuner.key_text(ft, 16) == "p: float32[16]");
  CHECK(tuner.key_text(it, 16) == "p: int32[16]");
  tuner(ft, 16);
  tuner(it, 16);
  CHECK(tuner.measured_tunings() == 2); // two dtypes, two keys
  tuner(ft, 16);
  CHECK(tuner.measured_tunings() == 2);
}

TEST_CASE("a tensor that cannot be the argument is refused, naming it, the value found and the fix",
          "[dlpack][host_tensor][autotune]") {
  cotune_test::private_cache cache;
  host_axpy tuner{cotune::kernel_source{.name = "dlpack_axpy", .code = axpy_code, .entry = "axpy"}, two_configs,
                  axpy_options()};
  std::vector<float> x(16), y(16);
  std::vector<std::int32_t> ints(16);
  std::vector<std::int64_t> shape{16};
  const DLTensor xt = tensor_over(x.data(), shape, float32);
  auto refused = [&](const DLTensor& bad_y) -> std::string {
    try {
      tuner(xt, bad_y, 16);
    } catch (const dlpack::tensor_error& e) {
      return e.what();
    }
    return "(not refused)";
  };
  const std::string head = "autotuner for 'dlpack_axpy': argument 1 ('y'), a DLPack tensor: ";

  SECTION("on a GPU") {
    const auto what = refused(tensor_over(y.data(), shape, float32, {kDLCUDA, 1}));
    CHECK_THAT(what, Contains(head + "it is on kDLCUDA:1, but the parameter takes host memory (kDLCPU)"));
    CHECK_THAT(what, Contains("x.cpu()"));
  }
  SECTION("of another element type") {
    const auto what = refused(tensor_over(ints.data(), shape, int32));
    CHECK_THAT(what, Contains(head + "its elements are int32, but the kernel's parameter declares float32"));
    CHECK_THAT(what, Contains("x.to(torch.float32)") && Contains("(or untyped: dlpack::host_tensor<>)"));
  }
  SECTION("of a type cotune has no name for") {
    CHECK_THAT(refused(tensor_over(y.data(), shape, DLDataType{kDLOpaqueHandle, 32, 1})),
               Contains(head + "its dtype (DLPack type code 3 with 32 bits) has no cotune element type"));
  }
  SECTION("of a vector type") {
    CHECK_THAT(refused(tensor_over(y.data(), shape, DLDataType{kDLFloat, 32, 4})),
               Contains(head + "its dtype has 4 lanes (a vector type)"));
  }
  SECTION("not contiguous") {
    std::vector<std::int64_t> square{4, 4};
    std::array<std::int64_t, 2> transposed{1, 4};
    const auto what = refused(tensor_over(y.data(), square, float32, {kDLCPU, 0}, transposed.data()));
    CHECK_THAT(what, Contains(head + "it is not contiguous: shape [4, 4], strides [1, 4] (in elements): dimension 1 "
                                     "has stride 4 where compact row-major data has 1"));
    CHECK_THAT(what, Contains("x.contiguous()"));
  }
  SECTION("without data") {
    CHECK_THAT(refused(tensor_over(static_cast<float*>(nullptr), shape, float32)),
               Contains(head + "its data pointer is null, but its shape holds 16 elements"));
  }
  SECTION("a null DLManagedTensor*") {
    std::string what;
    try {
      tuner(xt, static_cast<DLManagedTensor*>(nullptr), 16);
    } catch (const dlpack::tensor_error& e) {
      what = e.what();
    }
    CHECK_THAT(what, Contains(head + "the DLManagedTensor pointer is null"));
  }
  CHECK(tuner.measured_tunings() == 0); // refused before any tuning
  // Refused by the query functions too (they build the key).
  CHECK_THROWS_AS(tuner.key_text(xt, tensor_over(ints.data(), shape, int32), 16), dlpack::tensor_error);
}

#if defined(COTUNE_HAS_CUDA)

namespace {

std::string skip_reason() { return "skipped: no CUDA device here (" + cotune::cuda::availability().message + ")"; }

/// y[i] += 2 x[i], BLOCK elements per block.
const char* cuda_axpy_code = R"(
extern "C" __global__ void axpy(const float* x, float* y, int n) {
  for (int k = threadIdx.x; k < BLOCK; k += blockDim.x) {
    const int i = blockIdx.x * BLOCK + k;
    if (i < n) y[i] += 2.0f * x[i];
  }
}
)";

using cuda_axpy =
    cotune::autotuner<void(dlpack::cuda_tensor<const float>, dlpack::cuda_tensor<float>, int), cotune::cuda::cuda_backend>;

cuda_axpy::options cuda_axpy_options() {
  cuda_axpy::options o;
  o.arg_names = {"x", "y", "n"};
  o.key = {"x"};
  o.restore_value = {"y"};
  o.bench = quick_bench();
  o.cache_results = false;
  o.grid = [](const cotune::config& c, const auto&, const auto&, int n) {
    const int block = int(c.at("BLOCK").as_int());
    return cotune::launch_grid{.x = unsigned((n + block - 1) / block)};
  };
  return o;
}

std::vector<cotune::config> block_configs() {
  return cotune::config_space{}.axis("BLOCK", {256, 1024}).num_warps({2, 4}).build();
}

} // namespace

TEST_CASE("a CUDA tensor passes its device address and checks its memory without a device", "[dlpack][cuda]") {
  using cuda_tensor = dlpack::cuda_tensor<float>;
  static_assert(cotune::WritableBuffer<cuda_tensor> && cotune::DeviceBoundBuffer<cuda_tensor>);
  static_assert(std::is_same_v<decltype(cotune::kernel_arg(std::declval<cuda_tensor&>())), CUdeviceptr>);
  static_assert(std::is_same_v<cuda_tensor::snapshot_type, cotune::cuda::device_buffer<std::byte>>);

  std::vector<std::int64_t> shape{8, 4};
  const auto fake = reinterpret_cast<float*>(std::uintptr_t{0x7f0000001000});
  cuda_tensor ok = tensor_over(fake, shape, float32, {kDLCUDA, 1});
  ok.check_argument("k", 0, "x");
  CHECK(ok.size() == 32);
  CHECK(ok.device_ordinal() == 1);
  CHECK(ok.kernel_arg() == CUdeviceptr{0x7f0000001000});
  cuda_tensor managed = tensor_over(fake, shape, float32, {kDLCUDAManaged, 0});
  managed.check_argument("k", 0, "x");

  const cuda_tensor on_host = tensor_over(fake, shape, float32, {kDLCPU, 0});
  CHECK_THROWS_WITH(on_host.check_argument("k", 2, "out"),
                    Contains("argument 2 ('out'), a DLPack tensor: it is on kDLCPU:0, but the parameter takes CUDA "
                             "device memory (kDLCUDA or kDLCUDAManaged)") && Contains("x.cuda()"));
  const cuda_tensor on_rocm = tensor_over(fake, shape, float32, {kDLROCM, 0});
  CHECK_THROWS_AS(on_rocm.check_argument("k", 2, "out"), dlpack::tensor_error);
  const dlpack::cuda_tensor<cotune::cuda::float16> halves = tensor_over(fake, shape, float32, {kDLCUDA, 0});
  CHECK_THROWS_WITH(halves.check_argument("k", 0, "x"),
                    Contains("its elements are float32, but the kernel's parameter declares float16"));
}

TEST_CASE("a CUDA kernel tuned on DLTensors over cuMemAlloc'd memory", "[dlpack][cuda][gpu]") {
  const auto devices = cotune::cuda::devices();
  if (devices.empty()) {
    WARN(skip_reason());
    return;
  }
  cotune_test::private_cache cache;
  const auto& d = devices.front();
  const int n = 10000;
  std::vector<float> hx(n), hy(n, 1.0f);
  for (int i = 0; i < n; ++i) hx[std::size_t(i)] = float(i % 100);
  cotune::cuda::device_buffer<float> x(d, hx), y(d, hy); // cuMemAlloc
  std::vector<std::int64_t> shape{n};
  DLTensor xt = tensor_over(reinterpret_cast<float*>(x.data()), shape, float32, {kDLCUDA, d.ordinal});
  DLTensor yt = tensor_over(reinterpret_cast<float*>(y.data()), shape, float32, {kDLCUDA, d.ordinal});

  cuda_axpy tuner{cotune::kernel_source{.name = "dlpack_cuda_axpy", .code = cuda_axpy_code, .entry = "axpy"},
                  block_configs(), cuda_axpy_options()};
  CHECK(tuner.key_text(xt, yt, n) == "x: float32[10000], y: float32");
  const auto& result = tuner.tune_now(xt, yt, n); // restore_value keeps y as it was
  for (const auto& c : result.candidates) {
    INFO(c.cfg.text() << ": " << c.reason);
    CHECK(c.status == cotune::candidate_status::ok);
  }
  CHECK(y.to_vector() == hy);
  tuner(xt, yt, n);
  const auto out = y.to_vector();
  for (int i = 0; i < n; ++i) REQUIRE(out[std::size_t(i)] == 1.0f + 2.0f * float(i % 100));

  // A tensor that says it is on another device is refused before tuning (a new key) and at launch (a
  // tuned key), naming the argument.
  DLTensor elsewhere = yt;
  elsewhere.device.device_id = d.ordinal + 1;
  CHECK_THROWS_AS(tuner(xt, elsewhere, n), cotune::launch_error);
  CHECK_THROWS_WITH(tuner(xt, elsewhere, n),
                    Contains("cannot launch kernel 'dlpack_cuda_axpy' on CUDA device " + std::to_string(d.ordinal) +
                             ": argument 1 is in the memory of device " + std::to_string(d.ordinal + 1)));
  std::vector<std::int64_t> other_shape{n / 2};
  DLTensor x_half = xt, y_half = elsewhere;
  x_half.shape = y_half.shape = other_shape.data();
  CHECK_THROWS_WITH(tuner(x_half, y_half, n / 2),
                    Contains("argument 1 ('y') is in the memory of device " + std::to_string(d.ordinal + 1)));
  // A host tensor is refused, naming its device.
  DLTensor host_y = tensor_over(hy.data(), shape, float32);
  CHECK_THROWS_WITH(tuner(xt, host_y, n), Contains("it is on kDLCPU:0"));
}

#endif

#if defined(COTUNE_HAS_HIP)

TEST_CASE("a HIP tensor is a HIP kernel's argument: compiled here, run where an AMD GPU is", "[dlpack][hip]") {
  using hip_tensor = dlpack::hip_tensor<float>;
  static_assert(cotune::WritableBuffer<hip_tensor> && cotune::DeviceBoundBuffer<hip_tensor>);
  static_assert(std::is_same_v<decltype(cotune::kernel_arg(std::declval<hip_tensor&>())),
                               cotune::hip::memory_runtime::pointer>);
  // The HIP backend's launch compiles with tensors as its arguments (and runs on an AMD GPU only).
  [[maybe_unused]] auto launch = [](const cotune::hip::hip_backend& b, const cotune::hip::hip_backend::function& f,
                                    dlpack::hip_tensor<const float> x, hip_tensor y, int n) {
    b.launch(f, cotune::launch_grid{}, x, y, n);
  };

  std::vector<std::int64_t> shape{16};
  std::vector<float> v(16);
  const hip_tensor on_rocm = tensor_over(v.data(), shape, float32, {kDLROCM, 0});
  on_rocm.check_argument("k", 0, "x");
  const hip_tensor on_cuda = tensor_over(v.data(), shape, float32, {kDLCUDA, 0});
  CHECK_THROWS_WITH(on_cuda.check_argument("k", 0, "x"),
                    Contains("it is on kDLCUDA:0, but the parameter takes HIP device memory (kDLROCM)"));
}

#endif
