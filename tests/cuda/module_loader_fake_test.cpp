// The CUDA loader on a stand-in driver (tests/fakes/fake_libcuda.cpp),
// loaded before the loader looks for libcuda.so.1: what the loader does
// around the driver (which tier a module comes from, keeping one module
// per context and key, a binary the driver refuses, unloading) runs on
// every machine, GPU or not. The binaries are real: NVRTC compiles them
// for the stand-in's sm_80. Uses only the public API.
#include <kcache/admin.h>
#include <kcache/cache.h>
#include <kcache/cuda.h>

#include <dlfcn.h>
#include <gtest/gtest.h>

#include <filesystem>
#include <thread>
#include <vector>

#include "fakes/required_backends.h"

namespace kcache {
namespace {

// The stand-in's script (fake_libcuda.cpp).
struct FakeDriver {
  void* (*new_context)() = nullptr;
  void (*refuse_loads)(int) = nullptr;
  int (*loads)() = nullptr;
  int (*live_modules)() = nullptr;
  const char* (*function_name)(void*) = nullptr;
  int (*set_current)(void*) = nullptr;
  int (*get_current)(void**) = nullptr;

  bool load() {
    void* lib = dlopen(KCACHE_FAKE_CUDA_PATH, RTLD_NOW | RTLD_GLOBAL);
    if (lib == nullptr) return false;
    auto bind = [lib](auto& fn, const char* name) {
      fn = reinterpret_cast<std::remove_reference_t<decltype(fn)>>(dlsym(lib, name));
      return fn != nullptr;
    };
    return bind(new_context, "kcache_fake_cuda_new_context") &&
           bind(refuse_loads, "kcache_fake_cuda_refuse_loads") &&
           bind(loads, "kcache_fake_cuda_loads") &&
           bind(live_modules, "kcache_fake_cuda_live_modules") &&
           bind(function_name, "kcache_fake_cuda_function_name") &&
           bind(set_current, "cuCtxSetCurrent") && bind(get_current, "cuCtxGetCurrent");
  }
};

constexpr const char* kSource = R"(
template <int N>
__global__ void axpy(float a, const float* x, float* y) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < N) y[i] = a * x[i] + y[i];
}
extern "C" __global__ void scale(float* x) { x[threadIdx.x] *= 2.0f; }
)";

class FakeDriverLoaderTest : public ::testing::Test {
 protected:
  void SetUp() override {
    ASSERT_TRUE(fake_.load()) << "the stand-in driver " << KCACHE_FAKE_CUDA_PATH
                              << " cannot be loaded: " << dlerror();
    char pattern[] = "/tmp/kcache-cuda-fake-XXXXXX";
    dir_ = ::mkdtemp(pattern);
    std::filesystem::create_directory(dir_ + "/system");
    CompilerConfig config;
    config.backend = "nvrtc";
    auto compiler = make_compiler(config);
    if (!compiler) KCACHE_SKIP_OR_FAIL_BACKEND("nvrtc", compiler.status().message());
    compiler_ = std::move(*compiler);
    request_.source = kSource;
    request_.kernel_names = {"axpy<256>", "scale"};
    fake_.refuse_loads(0);
    fake_.set_current(nullptr);  // the loader makes device 0's primary context current
  }
  void TearDown() override { std::filesystem::remove_all(dir_); }

  // A process's view: a cache on the test's folders (`user` under the
  // test folder, the packages in system/).
  std::unique_ptr<Cache> open_cache(const std::string& user = "cache") {
    CacheOptions options;
    options.cache_dir = dir_ + "/" + user;
    options.system_db_path = dir_ + "/system";
    options.log_level = LogLevel::kError;
    auto cache = Cache::open(options);
    EXPECT_TRUE(cache.is_ok()) << cache.status().message();
    return std::move(*cache);
  }
  std::unique_ptr<cuda::ModuleLoader> loader_for(Cache& cache) {
    auto loader = cuda::ModuleLoader::create(cache, *compiler_);
    EXPECT_TRUE(loader.is_ok()) << loader.status().message();
    return loader ? std::move(*loader) : nullptr;
  }

  // An earlier process: a cache and a loader on the test's folders load
  // the "scale" kernel (compiling it once) and are gone; with `exported`,
  // the user cache is then exported as the stand-in device's package.
  void run_an_earlier_process(bool exported = false) {
    auto cache = open_cache();
    auto loader = loader_for(*cache);
    ASSERT_NE(loader, nullptr);
    auto loaded = loader->get_function(request_, "scale");
    ASSERT_TRUE(loaded.is_ok()) << loaded.status().message();
    if (exported) {
      auto package = CacheAdmin(*cache).export_db("sm_80_108", dir_ + "/system/sm_80_108.kdb");
      ASSERT_TRUE(package.is_ok()) << package.status().message();
    }
  }

  FakeDriver fake_;
  std::string dir_;
  std::unique_ptr<Compiler> compiler_;
  KernelRequest request_;
};

TEST_F(FakeDriverLoaderTest, TheTargetIsTheCurrentDevices) {
  auto cache = open_cache();
  auto loader = loader_for(*cache);
  ASSERT_NE(loader, nullptr);
  auto target = loader->current_target();
  ASSERT_TRUE(target.is_ok()) << target.status().message();
  EXPECT_EQ(target->to_string(), "sm_80_108");
  void* context = nullptr;
  fake_.get_current(&context);
  EXPECT_NE(context, nullptr) << "device 0's primary context was made current";
}

TEST_F(FakeDriverLoaderTest, LoadsOnceKeepsTheModuleAndUnloadsItAtTheEnd) {
  const int loads_before = fake_.loads();
  {
    auto cache = open_cache();
    auto loader = loader_for(*cache);
    ASSERT_NE(loader, nullptr);
    auto first = loader->get_function(request_, "axpy<256>");
    ASSERT_TRUE(first.is_ok()) << first.status().message() << first.status().details();
    EXPECT_EQ(first->tier, TierKind::kCompiled);
    EXPECT_TRUE(first->lowered_name.starts_with("_Z4axpyILi256EE")) << first->lowered_name;
    EXPECT_STREQ(fake_.function_name(first->function), first->lowered_name.c_str());

    // Again, and the module's other kernel: no tier, no second load.
    auto again = loader->get_function(request_, "axpy<256>");
    ASSERT_TRUE(again.is_ok());
    EXPECT_EQ(again->tier, TierKind::kMemory);
    EXPECT_EQ(again->module, first->module);
    EXPECT_EQ(again->function, first->function);
    auto other = loader->get_function(request_, "scale");
    ASSERT_TRUE(other.is_ok()) << other.status().message();
    EXPECT_EQ(other->module, first->module);
    EXPECT_STREQ(fake_.function_name(other->function), "scale");
    EXPECT_EQ(fake_.loads() - loads_before, 1);
    EXPECT_EQ(fake_.live_modules(), 1);
  }
  EXPECT_EQ(fake_.live_modules(), 0) << "the loader unloads its modules when destroyed";
}

TEST_F(FakeDriverLoaderTest, AnotherProcessLoadsFromTheUserTierThenFromAPackage) {
  ASSERT_NO_FATAL_FAILURE(run_an_earlier_process());
  {
    auto cache = open_cache();
    auto loader = loader_for(*cache);
    ASSERT_NE(loader, nullptr);
    auto warm = loader->get_function(request_, "scale");
    ASSERT_TRUE(warm.is_ok()) << warm.status().message();
    EXPECT_EQ(warm->tier, TierKind::kUser);
    auto exported = CacheAdmin(*cache).export_db("sm_80_108", dir_ + "/system/sm_80_108.kdb");
    ASSERT_TRUE(exported.is_ok()) << exported.status().message();
  }
  // A process with an empty user cache: the package, mapped, is loaded
  // from.
  auto cache = open_cache("empty");
  auto loader = loader_for(*cache);
  ASSERT_NE(loader, nullptr);
  auto packaged = loader->get_function(request_, "axpy<256>");
  ASSERT_TRUE(packaged.is_ok()) << packaged.status().message();
  EXPECT_EQ(packaged->tier, TierKind::kSystem);
  EXPECT_TRUE(packaged->lowered_name.starts_with("_Z4axpyILi256EE"));
  EXPECT_EQ(cache->stats().system_hits, 1u);
}

TEST_F(FakeDriverLoaderTest, ABinaryTheDriverRefusesIsEvictedAndCompiledAgain) {
  ASSERT_NO_FATAL_FAILURE(run_an_earlier_process());
  {
    auto cache = open_cache();
    auto loader = loader_for(*cache);
    ASSERT_NE(loader, nullptr);
    fake_.refuse_loads(1);  // the stored binary
    auto loaded = loader->get_function(request_, "scale");
    ASSERT_TRUE(loaded.is_ok()) << loaded.status().message();
    EXPECT_EQ(loaded->tier, TierKind::kCompiled);
    EXPECT_STREQ(fake_.function_name(loaded->function), "scale");
    EXPECT_EQ(cache->stats().rejected, 1u);
    EXPECT_EQ(cache->stats().compiles, 1u);
  }
  // What the next process finds is the binary compiled again.
  auto cache = open_cache();
  auto loader = loader_for(*cache);
  ASSERT_NE(loader, nullptr);
  auto loaded = loader->get_function(request_, "scale");
  ASSERT_TRUE(loaded.is_ok()) << loaded.status().message();
  EXPECT_EQ(loaded->tier, TierKind::kUser);
  EXPECT_EQ(cache->stats().rejected, 0u);
}

TEST_F(FakeDriverLoaderTest, APackagedBinaryTheDriverRefusesIsPassedOverForTheProcess) {
  ASSERT_NO_FATAL_FAILURE(run_an_earlier_process(/*exported=*/true));
  auto cache = open_cache("empty");
  auto loader = loader_for(*cache);
  ASSERT_NE(loader, nullptr);
  fake_.refuse_loads(1);
  auto loaded = loader->get_function(request_, "scale");
  ASSERT_TRUE(loaded.is_ok()) << loaded.status().message();
  EXPECT_EQ(loaded->tier, TierKind::kCompiled);
  EXPECT_EQ(cache->stats().rejected, 1u);
  EXPECT_TRUE(std::filesystem::exists(dir_ + "/system/sm_80_108.kdb"))
      << "a package is read-only: it is passed over, not changed";
  // Another loader of this process: the user tier has the new binary.
  auto second = loader_for(*cache);
  ASSERT_NE(second, nullptr);
  auto again = second->get_function(request_, "scale");
  ASSERT_TRUE(again.is_ok()) << again.status().message();
  EXPECT_EQ(again->tier, TierKind::kUser);
}

TEST_F(FakeDriverLoaderTest, AFreshBinaryTheDriverRefusesIsAnErrorNamingTheDriversReason) {
  auto cache = open_cache();
  auto loader = loader_for(*cache);
  ASSERT_NE(loader, nullptr);
  fake_.refuse_loads(1);
  auto loaded = loader->get_function(request_, "scale");
  ASSERT_FALSE(loaded.is_ok());
  EXPECT_EQ(loaded.status().code(), StatusCode::kUnavailable);
  EXPECT_NE(loaded.status().message().find("device kernel image is invalid"), std::string::npos)
      << loaded.status().message();
  EXPECT_EQ(fake_.live_modules(), 0);
  // Nothing was kept that the next request would trip on.
  auto next = loader->get_function(request_, "scale");
  ASSERT_TRUE(next.is_ok()) << next.status().message();
}

TEST_F(FakeDriverLoaderTest, AKernelTheModuleLacksIsNotFound) {
  auto cache = open_cache();
  auto loader = loader_for(*cache);
  ASSERT_NE(loader, nullptr);
  auto missing = loader->get_function(request_, "no_such_kernel");
  ASSERT_FALSE(missing.is_ok());
  EXPECT_EQ(missing.status().code(), StatusCode::kNotFound);
  EXPECT_NE(missing.status().message().find("no_such_kernel"), std::string::npos)
      << missing.status().message();
  // The module itself was loaded and is kept for the kernels it has.
  auto present = loader->get_function(request_, "scale");
  ASSERT_TRUE(present.is_ok());
  EXPECT_EQ(present->tier, TierKind::kMemory);
}

TEST_F(FakeDriverLoaderTest, EachContextGetsItsOwnModule) {
  const int loads_before = fake_.loads();
  {
    auto cache = open_cache();
    auto loader = loader_for(*cache);
    ASSERT_NE(loader, nullptr);
    auto in_primary = loader->get_function(request_, "scale");
    ASSERT_TRUE(in_primary.is_ok());
    void* primary = nullptr;
    fake_.get_current(&primary);

    void* other = fake_.new_context();
    ASSERT_EQ(fake_.set_current(other), 0);
    auto in_other = loader->get_function(request_, "scale");
    ASSERT_TRUE(in_other.is_ok()) << in_other.status().message();
    EXPECT_EQ(in_other->context, other);
    EXPECT_NE(in_other->module, in_primary->module);
    EXPECT_NE(in_other->tier, TierKind::kCompiled) << "the binary is the cache's by now";
    EXPECT_EQ(fake_.live_modules(), 2);

    ASSERT_EQ(fake_.set_current(primary), 0);
    auto back = loader->get_function(request_, "scale");
    ASSERT_TRUE(back.is_ok());
    EXPECT_EQ(back->module, in_primary->module);
    EXPECT_EQ(fake_.loads() - loads_before, 2);
  }
  EXPECT_EQ(fake_.live_modules(), 0) << "each module is unloaded in its own context";
}

TEST_F(FakeDriverLoaderTest, ThreadsAskingAtOnceShareOneModule) {
  auto cache = open_cache();
  auto loader = loader_for(*cache);
  ASSERT_NE(loader, nullptr);
  ASSERT_TRUE(loader->current_target().is_ok());
  void* primary = nullptr;
  fake_.get_current(&primary);
  constexpr int kThreads = 4;
  std::vector<void*> modules(kThreads);
  std::vector<std::thread> threads;
  for (int t = 0; t < kThreads; ++t) {
    threads.emplace_back([&, t] {
      fake_.set_current(primary);  // a context is current per thread
      auto loaded = loader->get_function(request_, "axpy<256>");
      modules[t] = loaded ? loaded->module : nullptr;
    });
  }
  for (auto& thread : threads) thread.join();
  for (int t = 0; t < kThreads; ++t) {
    EXPECT_NE(modules[t], nullptr) << t;
    EXPECT_EQ(modules[t], modules[0]) << t;
  }
  EXPECT_EQ(fake_.live_modules(), 1) << "a module loaded twice at once is unloaded once kept";
}

// A request kcache cannot key (here an include folder in the sysroot,
// which kcache does not look into) is served as Cache::get_or_compile serves
// it: compiled without the cache and loaded, every time. The loader once
// failed it with the key's kNotSupported.
TEST_F(FakeDriverLoaderTest, ARequestThatCannotBeKeyedIsCompiledWithoutTheCache) {
  request_.options = "-I=/nonexistent-kcache-folder";
  auto cache = open_cache();
  auto loader = loader_for(*cache);
  ASSERT_NE(loader, nullptr);
  for (int i = 0; i < 2; ++i) {
    auto loaded = loader->get_function(request_, "scale");
    ASSERT_TRUE(loaded.is_ok()) << loaded.status().message();
    EXPECT_EQ(loaded->tier, TierKind::kCompiled) << "request " << i;
    EXPECT_NE(loaded->function, nullptr);
  }
  EXPECT_EQ(cache->stats().compiles, 2u);
  EXPECT_EQ(cache->stats().uncacheable, 2u);
  auto listed = CacheAdmin(*cache).list();
  ASSERT_TRUE(listed.is_ok());
  EXPECT_TRUE(listed->empty());
}

}  // namespace
}  // namespace kcache
