// The CUDA loader. Without a driver (CI) it must fail cleanly, naming
// libcuda; with a GPU (the device machine) it loads, launches and checks a
// kernel. Uses only the public API (libkcache + libkcache_cuda).
#include <kcache/cache.h>
#include <kcache/cuda.h>

#include <dlfcn.h>
#include <gtest/gtest.h>

#include <cstdlib>
#include <filesystem>
#include <vector>

#include "fakes/required_backends.h"

namespace kcache {
namespace {

// The driver entry points the test itself needs to launch a kernel.
struct TestDriver {
  using CUresult = int;
  CUresult (*MemAlloc)(unsigned long long*, std::size_t) = nullptr;
  CUresult (*MemFree)(unsigned long long) = nullptr;
  CUresult (*MemcpyHtoD)(unsigned long long, const void*, std::size_t) = nullptr;
  CUresult (*MemcpyDtoH)(void*, unsigned long long, std::size_t) = nullptr;
  CUresult (*LaunchKernel)(void*, unsigned, unsigned, unsigned, unsigned, unsigned, unsigned,
                           unsigned, void*, void**, void**) = nullptr;
  CUresult (*CtxSynchronize)() = nullptr;
  bool load() {
    void* lib = dlopen("libcuda.so.1", RTLD_NOW);
    if (lib == nullptr) return false;
    MemAlloc = reinterpret_cast<decltype(MemAlloc)>(dlsym(lib, "cuMemAlloc_v2"));
    MemFree = reinterpret_cast<decltype(MemFree)>(dlsym(lib, "cuMemFree_v2"));
    MemcpyHtoD = reinterpret_cast<decltype(MemcpyHtoD)>(dlsym(lib, "cuMemcpyHtoD_v2"));
    MemcpyDtoH = reinterpret_cast<decltype(MemcpyDtoH)>(dlsym(lib, "cuMemcpyDtoH_v2"));
    LaunchKernel = reinterpret_cast<decltype(LaunchKernel)>(dlsym(lib, "cuLaunchKernel"));
    CtxSynchronize = reinterpret_cast<decltype(CtxSynchronize)>(dlsym(lib, "cuCtxSynchronize"));
    return MemAlloc && MemFree && MemcpyHtoD && MemcpyDtoH && LaunchKernel && CtxSynchronize;
  }
};

class ModuleLoaderTest : public ::testing::Test {
 protected:
  void SetUp() override {
    char pattern[] = "/tmp/kcache-cuda-test-XXXXXX";
    dir_ = ::mkdtemp(pattern);
    CacheOptions options;
    options.cache_dir = dir_ + "/cache";
    options.system_db_path = dir_ + "/system";
    options.log_level = LogLevel::kError;
    cache_ = std::move(*Cache::open(options));
    CompilerConfig config;
    config.backend = "nvrtc";
    auto compiler = make_compiler(config);
    if (!compiler)
      KCACHE_SKIP_OR_FAIL_BACKEND("nvrtc", "no NVRTC: " << compiler.status().message());
    compiler_ = std::move(*compiler);
  }
  void TearDown() override { std::filesystem::remove_all(dir_); }

  std::string dir_;
  std::unique_ptr<Cache> cache_;
  std::unique_ptr<Compiler> compiler_;
};

TEST_F(ModuleLoaderTest, WithoutADriverItSaysWhatIsMissing) {
  auto loader = cuda::ModuleLoader::create(*cache_, *compiler_);
  if (loader) GTEST_SKIP() << "a CUDA driver is present; the GPU tests run instead";
  EXPECT_EQ(loader.status().code(), StatusCode::kUnavailable);
  const std::string& message = loader.status().message();
  EXPECT_TRUE(message.find("libcuda") != std::string::npos ||
              message.find("cuInit") != std::string::npos)
      << message;
}

TEST_F(ModuleLoaderTest, LoadsLaunchesAndReusesModules) {
  auto loader = cuda::ModuleLoader::create(*cache_, *compiler_);
  if (!loader) GTEST_SKIP() << "no GPU: " << loader.status().message();
  TestDriver driver;
  ASSERT_TRUE(driver.load());

  KernelRequest request;
  request.source = R"(
template <int N>
__global__ void axpy(float a, const float* x, float* y) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < N) y[i] = a * x[i] + y[i];
})";
  request.kernel_names = {"axpy<1024>"};
  auto target = (*loader)->current_target();
  ASSERT_TRUE(target.is_ok()) << target.status().message();
  EXPECT_TRUE(target->arch.starts_with("sm_"));
  EXPECT_GT(target->units, 0);

  auto first = (*loader)->get_function(request, "axpy<1024>");
  ASSERT_TRUE(first.is_ok()) << first.status().message() << first.status().details();
  EXPECT_EQ(first->tier, TierKind::kCompiled);
  EXPECT_TRUE(first->lowered_name.starts_with("_Z4axpyILi1024EE"));

  constexpr int kN = 1024;
  std::vector<float> x(kN), y(kN);
  for (int i = 0; i < kN; ++i) {
    x[i] = static_cast<float>(i);
    y[i] = 1.0f;
  }
  unsigned long long dx = 0, dy = 0;
  ASSERT_EQ(driver.MemAlloc(&dx, kN * sizeof(float)), 0);
  ASSERT_EQ(driver.MemAlloc(&dy, kN * sizeof(float)), 0);
  driver.MemcpyHtoD(dx, x.data(), kN * sizeof(float));
  driver.MemcpyHtoD(dy, y.data(), kN * sizeof(float));
  float a = 2.0f;
  void* args[] = {&a, &dx, &dy};
  ASSERT_EQ(
      driver.LaunchKernel(first->function, kN / 256, 1, 1, 256, 1, 1, 0, nullptr, args, nullptr),
      0);
  ASSERT_EQ(driver.CtxSynchronize(), 0);
  driver.MemcpyDtoH(y.data(), dy, kN * sizeof(float));
  for (int i = 0; i < kN; ++i) ASSERT_EQ(y[i], 2.0f * i + 1.0f) << i;
  driver.MemFree(dx);
  driver.MemFree(dy);

  auto again = (*loader)->get_function(request, "axpy<1024>");
  ASSERT_TRUE(again.is_ok());
  EXPECT_EQ(again->tier, TierKind::kMemory);
  EXPECT_EQ(again->module, first->module);

  // A new process (new cache and loader) finds it in the user tier.
  CacheOptions options;
  options.cache_dir = dir_ + "/cache";
  options.system_db_path = dir_ + "/system";
  options.log_level = LogLevel::kError;
  auto fresh_cache = std::move(*Cache::open(options));
  auto fresh = std::move(*cuda::ModuleLoader::create(*fresh_cache, *compiler_));
  auto warm = fresh->get_function(request, "axpy<1024>");
  ASSERT_TRUE(warm.is_ok());
  EXPECT_EQ(warm->tier, TierKind::kUser);
  EXPECT_EQ(warm->key, first->key);
  // Asked again, the loader uses its module before looking in any tier; it
  // kept the module, not the bytes (the cache's memory tier is empty).
  auto reused = fresh->get_function(request, "axpy<1024>");
  ASSERT_TRUE(reused.is_ok());
  EXPECT_EQ(reused->tier, TierKind::kMemory);
  EXPECT_EQ(reused->module, warm->module);
  EXPECT_EQ(reused->function, warm->function);
  EXPECT_EQ(fresh_cache->stats().requests, 1u);
  EXPECT_EQ(fresh_cache->get_or_compile(request, *compiler_, {.target = *target})->tier,
            TierKind::kUser);

  EXPECT_EQ((*loader)->get_function(request, "missing<1>").status().code(), StatusCode::kNotFound);
}

}  // namespace
}  // namespace kcache
