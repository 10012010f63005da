// cuda_load_bench: "kernel ready" time on a real GPU, one phase per process.
//
//   cuda_load_bench gen      --dir D [--small N] [--big M]   write the kernel sources
//   cuda_load_bench prepare  --dir D   compile all through kcache (user tier), time NVRTC
//                                      (cold if CUDA_CACHE_DISABLE=1), write raw cubin/ptx,
//                                      export the user database to D/system/
//   cuda_load_bench measure  --dir D --mode M --set S   M: floor | user | system | ptx,
//                                      or, parts of kcache's time: key | fetch |
//                                      fetch_system | split (key and fetch* need no GPU),
//                                      or paired_user | paired_system [--parity P],
//                                      or paired_parts_user | paired_parts_system,
//                                      or paired_least [--parity P]
//   cuda_load_bench prepare  --dir D --target sm_90_132   the same without a GPU
//   cuda_load_bench nvrtc    --dir D --set S            NVRTC compile only
//   cuda_load_bench host                                the host's clock, system call
//                                                       and copy costs
//
// Every phase prints one line per kernel: "<mode> <set> <id> <microseconds>"
// and, for kcache modes, "setup <mode> <microseconds>" (Cache::open,
// make_compiler, ModuleLoader::create: once per process). The driver
// script (run_load_bench.py) runs each phase in a fresh process and
// computes the medians.
//
// Each kernel is timed from the request to a CUfunction: for `floor`,
// cuModuleLoadData + cuModuleGetFunction from bytes already in memory; for
// kcache, ModuleLoader::get_function (key, tier read and check, load); for
// `ptx`, cuModuleLoadData of PTX (the driver's JIT cache decides the cost).
//
// paired_*: the floor and kcache in one process, kernel by kernel in turn
// (kernel i by the floor when i + P is even, by kcache otherwise), printing
// "pfloor_<tier>" and "pkcache_<tier>" lines. Processes on these hosts come
// in fast and slow kinds (module loads ~30 or ~38 us for the same cubin,
// pinned to one CPU); a ratio taken within one process cancels that.
#include <kcache/admin.h>
#include <kcache/advanced.h>
#include <kcache/cache.h>
#include <kcache/cuda.h>

#include <dlfcn.h>
#include <fcntl.h>
#include <sys/mman.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <map>
#include <sstream>
#include <string>
#include <vector>

#define XXH_STATIC_LINKING_ONLY  // XXH3_state_t on the stack, as kcache's checksum holds it
#include <xxhash.h>
#if __has_include(<xxh_x86dispatch.h>)
#include <xxh_x86dispatch.h>  // the AVX2/AVX-512 code kcache's checksum runs
#endif

namespace {

using Clock = std::chrono::steady_clock;
namespace fs = std::filesystem;

double micros_since(Clock::time_point start) {
  return std::chrono::duration<double, std::micro>(Clock::now() - start).count();
}

[[noreturn]] void die(const std::string& message) {
  std::fprintf(stderr, "cuda_load_bench: %s\n", message.c_str());
  std::exit(1);
}

// --- kernels -----------------------------------------------------------------

struct Kernel {
  std::string id;                  // "small_07"
  std::string set;                 // "small" or "big"
  std::string source;              // CUDA C++
  std::vector<std::string> names;  // name expressions; names[0] is looked up
};

std::string small_source(int variant) {
  return "#define VARIANT " + std::to_string(variant) + R"(
// Tiled SGEMM, one output per thread (the kind of kernel a JIT library
// generates in many small variants).
extern "C" __global__ void sgemm_tiled(int M, int N, int K, const float* __restrict__ A,
                                       const float* __restrict__ B, float* __restrict__ C) {
  __shared__ float As[16][16];
  __shared__ float Bs[16][16];
  int row = blockIdx.y * 16 + threadIdx.y;
  int col = blockIdx.x * 16 + threadIdx.x;
  float acc = 0.0f;
  for (int k0 = 0; k0 < K; k0 += 16) {
    As[threadIdx.y][threadIdx.x] = (row < M && k0 + threadIdx.x < K) ? A[row * K + k0 + threadIdx.x] : 0.0f;
    Bs[threadIdx.y][threadIdx.x] = (col < N && k0 + threadIdx.y < K) ? B[(k0 + threadIdx.y) * N + col] : 0.0f;
    __syncthreads();
#pragma unroll
    for (int k = 0; k < 16; ++k) acc += As[threadIdx.y][k] * Bs[k][threadIdx.x];
    __syncthreads();
  }
  if (row < M && col < N) C[row * N + col] = acc * (1.0f + VARIANT * 1e-3f);
}
)";
}

// Register-tiled GEMM, 9 instantiations per module: a large module (the
// kind a GEMM library ships per problem family).
std::string big_source(int variant) {
  return "#define VARIANT " + std::to_string(variant) + R"(
template <int BM, int BN, int BK, int TM, int TN>
__global__ void __launch_bounds__((BM / TM) * (BN / TN))
gemm_rt(int M, int N, int K, const float* __restrict__ A, const float* __restrict__ B,
        float* __restrict__ C, float alpha) {
  __shared__ float As[BK][BM];
  __shared__ float Bs[BK][BN];
  float acc[TM][TN];
#pragma unroll
  for (int m = 0; m < TM; ++m)
#pragma unroll
    for (int n = 0; n < TN; ++n) acc[m][n] = 0.0f;
  float ra[TM];
  float rb[TN];
  const int tid = threadIdx.x;
  const int tx = tid % (BN / TN);
  const int ty = tid / (BN / TN);
  for (int k0 = 0; k0 < K; k0 += BK) {
    for (int i = tid; i < BM * BK; i += blockDim.x) {
      int r = i / BK, c = i % BK, gr = blockIdx.y * BM + r, gc = k0 + c;
      As[c][r] = (gr < M && gc < K) ? A[gr * K + gc] : 0.0f;
    }
    for (int i = tid; i < BK * BN; i += blockDim.x) {
      int r = i / BN, c = i % BN, gr = k0 + r, gc = blockIdx.x * BN + c;
      Bs[r][c] = (gr < K && gc < N) ? B[gr * N + gc] : 0.0f;
    }
    __syncthreads();
#pragma unroll
    for (int k = 0; k < BK; ++k) {
#pragma unroll
      for (int m = 0; m < TM; ++m) ra[m] = As[k][ty * TM + m];
#pragma unroll
      for (int n = 0; n < TN; ++n) rb[n] = Bs[k][tx * TN + n];
#pragma unroll
      for (int m = 0; m < TM; ++m)
#pragma unroll
        for (int n = 0; n < TN; ++n) acc[m][n] += ra[m] * rb[n];
    }
    __syncthreads();
  }
#pragma unroll
  for (int m = 0; m < TM; ++m)
#pragma unroll
    for (int n = 0; n < TN; ++n) {
      int r = blockIdx.y * BM + ty * TM + m, c = blockIdx.x * BN + tx * TN + n;
      if (r < M && c < N) C[r * N + c] = alpha * acc[m][n] * (1.0f + VARIANT * 1e-3f);
    }
}
)";
}

const char* kBigInstances[] = {
    "gemm_rt<64, 64, 8, 4, 4>",  "gemm_rt<64, 64, 16, 4, 4>",  "gemm_rt<128, 64, 8, 8, 4>",
    "gemm_rt<64, 128, 8, 4, 8>", "gemm_rt<128, 128, 8, 8, 8>", "gemm_rt<128, 128, 16, 8, 8>",
    "gemm_rt<64, 64, 32, 4, 4>", "gemm_rt<128, 64, 16, 8, 4>", "gemm_rt<64, 128, 16, 4, 8>"};

std::string two_digits(int i) { return (i < 10 ? "0" : "") + std::to_string(i); }

std::vector<Kernel> make_kernels(int small, int big) {
  std::vector<Kernel> kernels;
  for (int i = 0; i < small; ++i) {
    kernels.push_back({"small_" + two_digits(i), "small", small_source(i), {"sgemm_tiled"}});
  }
  for (int i = 0; i < big; ++i) {
    Kernel k{"big_" + two_digits(i), "big", big_source(i), {}};
    for (const char* name : kBigInstances) k.names.emplace_back(name);
    kernels.push_back(std::move(k));
  }
  return kernels;
}

// The manifest: "<id> <set>" lines, plus <id>.cu and <id>.names files.
void write_kernels(const fs::path& dir, const std::vector<Kernel>& kernels) {
  fs::create_directories(dir / "src");
  std::ofstream manifest(dir / "kernels.txt");
  for (const auto& k : kernels) {
    manifest << k.id << " " << k.set << "\n";
    std::ofstream(dir / "src" / (k.id + ".cu")) << k.source;
    std::ofstream names(dir / "src" / (k.id + ".names"));
    for (const auto& n : k.names) names << n << "\n";
  }
}

std::string read_text(const fs::path& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) die("cannot read " + path.string());
  std::stringstream text;
  text << in.rdbuf();
  return text.str();
}

std::vector<Kernel> read_kernels(const fs::path& dir, const std::string& set) {
  std::vector<Kernel> kernels;
  std::ifstream manifest(dir / "kernels.txt");
  std::string id, kernel_set;
  while (manifest >> id >> kernel_set) {
    if (!set.empty() && kernel_set != set) continue;
    Kernel k{id, kernel_set, read_text(dir / "src" / (id + ".cu")), {}};
    std::ifstream names(dir / "src" / (id + ".names"));
    for (std::string line; std::getline(names, line);) {
      if (!line.empty()) k.names.push_back(line);
    }
    kernels.push_back(std::move(k));
  }
  if (kernels.empty()) die("no kernels in " + (dir / "kernels.txt").string() + " for set " + set);
  return kernels;
}

// --- the driver, for the floor and the PTX path ------------------------------------

struct Driver {
  using CUresult = int;
  CUresult (*Init)(unsigned) = nullptr;
  CUresult (*DeviceGet)(int*, int) = nullptr;
  CUresult (*PrimaryCtxRetain)(void**, int) = nullptr;
  CUresult (*CtxSetCurrent)(void*) = nullptr;
  CUresult (*ModuleLoadData)(void**, const void*) = nullptr;
  CUresult (*ModuleGetFunction)(void**, void*, const char*) = nullptr;
  CUresult (*GetErrorString)(CUresult, const char**) = nullptr;

  void load() {
    void* lib = dlopen("libcuda.so.1", RTLD_NOW);
    if (lib == nullptr) die("no libcuda.so.1: " + std::string(dlerror()));
    auto bind = [lib](auto& fn, const char* name) {
      fn = reinterpret_cast<std::remove_reference_t<decltype(fn)>>(dlsym(lib, name));
      if (fn == nullptr) die(std::string("libcuda has no ") + name);
    };
    bind(Init, "cuInit");
    bind(DeviceGet, "cuDeviceGet");
    bind(PrimaryCtxRetain, "cuDevicePrimaryCtxRetain");
    bind(CtxSetCurrent, "cuCtxSetCurrent");
    bind(ModuleLoadData, "cuModuleLoadData");
    bind(ModuleGetFunction, "cuModuleGetFunction");
    bind(GetErrorString, "cuGetErrorString");
  }
  void check(CUresult rc, const char* what) const {
    if (rc == 0) return;
    const char* text = nullptr;
    GetErrorString(rc, &text);
    die(std::string(what) + ": " + (text ? text : std::to_string(rc)));
  }
  // The primary context of device 0, made current: outside every timing.
  void make_context() const {
    check(Init(0), "cuInit");
    int device = 0;
    check(DeviceGet(&device, 0), "cuDeviceGet");
    void* context = nullptr;
    check(PrimaryCtxRetain(&context, device), "cuDevicePrimaryCtxRetain");
    check(CtxSetCurrent(context), "cuCtxSetCurrent");
  }
};

// --- the least a mapped system tier must do (issue 11) ---------------------
//
// `prepare` also writes D/least.bin (its index D/least.txt): every kernel's
// entry laid out as kcache's are (a 72-byte head with the key, the head's
// and the rest's XXH3-128, the key material, the metadata, the binary),
// each at a 64-byte boundary. paired_least times, beside the floor, only
// the work issue 11 asks of any system tier: hash the request's key text,
// verify the entry's checksum in the mapping before its first use, compare
// the key and the material byte for byte, and load the binary straight
// from the mapping. Nothing is looked up, allocated or built per request:
// a lower bound for the mapped tier on this host, not an implementation.

constexpr std::size_t kLeastHead = 88;      // kcache's entry header (format/entry.h)
constexpr std::size_t kLeastChecksum = 72;  // where its checksum lies in it

XXH128_canonical_t least_checksum(const std::uint8_t* entry, std::size_t size) {
  alignas(64) XXH3_state_t state;
  XXH3_128bits_reset(&state);
  XXH3_128bits_update(&state, entry, kLeastChecksum);
  XXH3_128bits_update(&state, entry + kLeastHead, size - kLeastHead);
  XXH128_canonical_t out;
  XXH128_canonicalFromHash(&out, XXH3_128bits_digest(&state));
  return out;
}

// --- kcache setup ------------------------------------------------------------------

struct KcacheSetup {
  std::unique_ptr<kcache::Cache> cache;
  std::unique_ptr<kcache::Compiler> compiler;
};

// `defaults`: the memory tier as a user gets it (the loader's modes);
// otherwise none, so that every lookup reads its tier (the lookup-only
// modes, which may repeat lookups).
KcacheSetup open_kcache(const fs::path& user_dir, const fs::path& system_dir,
                        bool defaults = false) {
  KcacheSetup setup;
  kcache::CacheOptions options;
  options.cache_dir = user_dir.string();
  options.system_db_path = system_dir.string();
  if (!defaults) options.memory_cache_size = 0;
  options.log_level = kcache::LogLevel::kError;
  auto cache = kcache::Cache::open(options);
  if (!cache) die(cache.status().message());
  setup.cache = std::move(*cache);
  kcache::CompilerConfig config;
  config.backend = "nvrtc";
  auto compiler = kcache::make_compiler(config);
  if (!compiler) die(compiler.status().message());
  setup.compiler = std::move(*compiler);
  return setup;
}

// Times the compiler inside a kcache miss.
class TimedCompiler final : public kcache::Compiler {
 public:
  explicit TimedCompiler(kcache::Compiler& inner) : inner_(inner) {}
  const kcache::CompilerIdentity& identity() const override { return inner_.identity(); }
  const kcache::CompilerInputs& inputs() const override { return inner_.inputs(); }
  kcache::Result<kcache::Target> resolve_target(const kcache::Target& t) const override {
    return inner_.resolve_target(t);
  }
  kcache::Result<kcache::CompileOutput> compile(const kcache::KernelRequest& request,
                                                const kcache::Target& target) override {
    auto start = Clock::now();
    auto out = inner_.compile(request, target);
    last_us = micros_since(start);
    return out;
  }
  double last_us = 0;

 private:
  kcache::Compiler& inner_;
};

kcache::KernelRequest request_for(const Kernel& k, const kcache::Target& target) {
  kcache::KernelRequest request;
  request.source = k.source;
  request.kernel_names = k.names;
  request.options = "-std=c++17";
  request.target = target;
  return request;
}

void write_bytes(const fs::path& path, std::span<const std::uint8_t> bytes) {
  std::ofstream(path, std::ios::binary)
      .write(reinterpret_cast<const char*>(bytes.data()),
             static_cast<std::streamsize>(bytes.size()));
}

// --- phases ---------------------------------------------------------------------

// `cpu_target` (e.g. "sm_90_132"): no GPU; every kernel goes through
// Cache::get_or_compile for that target (to profile the fetch path here).
// D/least.bin and D/least.txt ("<id> <offset> <size> <material> <metadata>"
// a line): see paired_least.
void write_least(const fs::path& dir, KcacheSetup& kc, const kcache::Target& target) {
  std::ofstream bin(dir / "least.bin", std::ios::binary);
  std::ofstream index(dir / "least.txt");
  std::uint64_t offset = 0;
  for (const auto& k : read_kernels(dir, "")) {
    const kcache::KernelRequest request = request_for(k, target);
    auto keyed = kcache::AdvancedCache(*kc.cache).key_for(request, *kc.compiler);
    if (!keyed) die(k.id + ": " + keyed.status().message());
    auto cached = kc.cache->get_or_compile(request, *kc.compiler);
    if (!cached) die(k.id + ": " + cached.status().message());
    const std::string material = keyed->second.serialize();
    std::string metadata;
    for (const auto& [name, value] : cached->metadata_fields) {
      metadata += name + " " + value + "\n";
    }
    std::vector<std::uint8_t> entry(kLeastHead, 0);
    std::memcpy(entry.data(), "KCEN", 4);
    std::memcpy(entry.data() + 16, keyed->first.bytes().data(), kcache::CacheKey::kSize);
    entry.insert(entry.end(), material.begin(), material.end());
    entry.insert(entry.end(), metadata.begin(), metadata.end());
    entry.insert(entry.end(), cached->binary().begin(), cached->binary().end());
    const XXH128_canonical_t sum = least_checksum(entry.data(), entry.size());
    std::memcpy(entry.data() + kLeastChecksum, sum.digest, sizeof sum.digest);
    const std::vector<char> pad((64 - offset % 64) % 64, 0);
    bin.write(pad.data(), static_cast<std::streamsize>(pad.size()));
    offset += pad.size();
    bin.write(reinterpret_cast<const char*>(entry.data()),
              static_cast<std::streamsize>(entry.size()));
    index << k.id << ' ' << offset << ' ' << entry.size() << ' ' << material.size() << ' '
          << metadata.size() << '\n';
    offset += entry.size();
  }
  bin.close();
  index.close();
  if (!bin || !index) die("cannot write " + (dir / "least.bin").string());
}

int prepare(const fs::path& dir, const std::string& cpu_target) {
  Driver driver;
  KcacheSetup kc = open_kcache(dir / "cache", dir / "no-system");
  TimedCompiler timed(*kc.compiler);
  std::unique_ptr<kcache::cuda::ModuleLoader> loader;
  kcache::Result<kcache::Target> target = kcache::Target::parse(cpu_target);
  if (cpu_target.empty()) {
    driver.load();
    driver.make_context();
    auto created = kcache::cuda::ModuleLoader::create(*kc.cache, timed);
    if (!created) die(created.status().message());
    loader = std::move(*created);
    target = loader->current_target();
  }
  if (!target) die(target.status().message());
  std::printf("target %s\n", target->to_string().c_str());
  fs::create_directories(dir / "raw");
  fs::create_directories(dir / "system");
  kcache::CompilerConfig ptx_config;
  ptx_config.backend = "nvrtc";
  auto ptx_compiler = kcache::make_compiler(ptx_config);
  for (const auto& k : read_kernels(dir, "")) {
    kcache::Result<kcache::cuda::LoadedKernel> first = kcache::Status::internal("unset");
    if (loader) {
      first = loader->get_function(request_for(k, *target), k.names[0]);
    } else if (auto cached = kc.cache->get_or_compile(request_for(k, *target), timed)) {
      kcache::cuda::LoadedKernel loaded;
      loaded.tier = cached->tier;
      loaded.lowered_name = cached->lowered_name(k.names[0]);
      first = loaded;
    } else {
      first = cached.status();
    }
    if (!first) die(k.id + ": " + first.status().message() + "\n" + first.status().details());
    if (first->tier != kcache::TierKind::kCompiled)
      die(k.id + " came from the " + std::string(kcache::tier_name(first->tier)) +
          " tier, not compiled: reuse a fresh dir");
    std::printf("nvrtc_cold %s %s %.1f\n", k.set.c_str(), k.id.c_str(), timed.last_us);
    auto cubin = kc.cache->get_or_compile(request_for(k, *target), timed);
    write_bytes(dir / "raw" / (k.id + ".cubin"), cubin->binary());
    std::ofstream(dir / "raw" / (k.id + ".lowered")) << first->lowered_name;
    auto ptx_target = kcache::Target::parse("compute_" + target->arch.substr(3));
    auto ptx = (*ptx_compiler)->compile(request_for(k, *ptx_target), *ptx_target);
    if (!ptx) die(k.id + " ptx: " + ptx.status().message());
    write_bytes(dir / "raw" / (k.id + ".ptx"), ptx->binary);
    std::printf("size %s %s cubin %zu ptx %zu\n", k.set.c_str(), k.id.c_str(),
                cubin->binary().size(), ptx->binary.size());
  }
  auto exported = kcache::CacheAdmin(*kc.cache).export_db(
      target->db_basename(), (dir / "system" / (target->db_basename() + ".kdb")).string());
  if (!exported) die("export: " + exported.status().message());
  std::printf("exported %llu entries to %s\n", static_cast<unsigned long long>(*exported),
              (dir / "system").c_str());
  write_least(dir, kc, *target);
  return 0;
}

std::vector<std::uint8_t> read_bytes(const fs::path& path) {
  std::string text = read_text(path);
  std::vector<std::uint8_t> bytes(text.begin(), text.end());
  bytes.push_back(0);  // PTX is text: cuModuleLoadData wants it NUL-terminated
  return bytes;
}

int paired(const fs::path& dir, const std::string& mode, const std::string& set, int parity);
int paired_parts(const fs::path& dir, const std::string& mode, const std::string& set, int parity);
int paired_least(const fs::path& dir, const std::string& set, int parity);

int measure(const fs::path& dir, const std::string& mode, const std::string& set, int parity) {
  Driver driver;
  const bool no_gpu = mode == "fetch" || mode == "fetch_system" || mode == "key";
  if (!no_gpu) {  // the lookup alone runs without a GPU, too
    driver.load();
    driver.make_context();
  }
  auto kernels = read_kernels(dir, set);
  if (mode == "floor" || mode == "ptx") {
    std::vector<std::vector<std::uint8_t>> images;
    std::vector<std::string> symbols;
    for (const auto& k : kernels) {
      images.push_back(read_bytes(dir / "raw" / (k.id + (mode == "floor" ? ".cubin" : ".ptx"))));
      symbols.push_back(read_text(dir / "raw" / (k.id + ".lowered")));
    }
    for (std::size_t i = 0; i < kernels.size(); ++i) {
      auto start = Clock::now();
      void* module = nullptr;
      void* function = nullptr;
      driver.check(driver.ModuleLoadData(&module, images[i].data()), "cuModuleLoadData");
      driver.check(driver.ModuleGetFunction(&function, module, symbols[i].c_str()),
                   "cuModuleGetFunction");
      std::printf("%s %s %s %.2f\n", mode.c_str(), set.c_str(), kernels[i].id.c_str(),
                  micros_since(start));
    }
    return 0;
  }
  if (mode == "probe") {
    // Does the image's alignment change cuModuleLoadData's cost? The same
    // bytes at offsets 0, 1, 8 and 88 (an entry header) from a 64-aligned base.
    for (const auto& k : kernels) {
      std::vector<std::uint8_t> image = read_bytes(dir / "raw" / (k.id + ".cubin"));
      std::string symbol = read_text(dir / "raw" / (k.id + ".lowered"));
      for (std::size_t offset : {0u, 1u, 8u, 88u, 0u}) {
        std::vector<std::uint8_t> storage(image.size() + 192);
        auto base = reinterpret_cast<std::uintptr_t>(storage.data());
        std::uint8_t* at = storage.data() + ((64 - base % 64) % 64) + offset;
        std::memcpy(at, image.data(), image.size());
        auto start = Clock::now();
        void* module = nullptr;
        void* function = nullptr;
        driver.check(driver.ModuleLoadData(&module, at), "cuModuleLoadData");
        driver.check(driver.ModuleGetFunction(&function, module, symbol.c_str()),
                     "cuModuleGetFunction");
        std::printf("probe_%zu %s %s %.2f\n", offset, set.c_str(), k.id.c_str(),
                    micros_since(start));
      }
    }
    return 0;
  }
  // key: Cache::key_for alone (key derivation). fetch, fetch_system: the
  // cache lookup alone (Cache::get_or_compile, a hit in the user or the
  // system tier). split: a user-tier lookup, then the load of the fetched
  // bytes, timed apart. KCACHE_BENCH_LOOPS=N repeats the lookups N times
  // first (for a profiler).
  if (mode == "key") {
    KcacheSetup kc = open_kcache(dir / "cache", dir / "no-system");
    kcache::Target target = *kcache::Target::parse("sm_90_132");
    for (const auto& k : kernels) {
      auto request = request_for(k, target);
      auto start = Clock::now();
      auto key = kcache::AdvancedCache(*kc.cache).key_for(request, *kc.compiler);
      double us = micros_since(start);
      if (!key) die(k.id + ": " + key.status().message());
      std::printf("key %s %s %.2f\n", set.c_str(), k.id.c_str(), us);
    }
    return 0;
  }
  if (mode == "fetch" || mode == "fetch_system" || mode == "split") {
    const bool system = mode == "fetch_system";
    KcacheSetup kc = system ? open_kcache(dir / "empty-user", dir / "system")
                            : open_kcache(dir / "cache", dir / "no-system");
    const kcache::TierKind expected = system ? kcache::TierKind::kSystem : kcache::TierKind::kUser;
    kcache::Target target = *kcache::Target::parse("sm_90_132");
    const char* loops_text = std::getenv("KCACHE_BENCH_LOOPS");
    const int loops = mode != "split" && loops_text != nullptr ? std::atoi(loops_text) : 1;
    for (int loop = 1; loop < loops; ++loop) {
      for (const auto& k : kernels)
        (void)kc.cache->get_or_compile(request_for(k, target), *kc.compiler);
    }
    // KCACHE_BENCH_THRASH_MB=N: before each timed lookup, write N MB and
    // make a few system calls, a stand-in (without a GPU) for what a module
    // load does to the CPU's caches between two requests.
    const char* thrash_text = std::getenv("KCACHE_BENCH_THRASH_MB");
    std::vector<char> thrash(thrash_text ? std::size_t(std::atoi(thrash_text)) << 20 : 0);
    for (const auto& k : kernels) {
      auto request = request_for(k, target);
      if (!thrash.empty()) {
        std::memset(thrash.data(), static_cast<int>(thrash.size() + k.id.size()), thrash.size());
        for (int i = 0; i < 20; ++i) (void)getppid();
      }
      auto start = Clock::now();
      auto fetched = kc.cache->get_or_compile(request, *kc.compiler);
      double fetch_us = micros_since(start);
      if (!fetched || fetched->tier != expected) die(k.id + ": not a " + mode + " hit");
      if (mode != "split") {
        std::printf("%s %s %s %.2f\n", mode.c_str(), set.c_str(), k.id.c_str(), fetch_us);
        continue;
      }
      const std::string symbol = fetched->lowered_name(k.names[0]);
      start = Clock::now();
      void* module = nullptr;
      void* function = nullptr;
      driver.check(driver.ModuleLoadData(&module, fetched->binary().data()), "cuModuleLoadData");
      driver.check(driver.ModuleGetFunction(&function, module, symbol.c_str()),
                   "cuModuleGetFunction");
      double load_us = micros_since(start);
      std::printf("split_fetch %s %s %.2f\nsplit_load %s %s %.2f\n", set.c_str(), k.id.c_str(),
                  fetch_us, set.c_str(), k.id.c_str(), load_us);
    }
    return 0;
  }
  if (mode == "paired_user" || mode == "paired_system") return paired(dir, mode, set, parity);
  if (mode == "paired_least") return paired_least(dir, set, parity);
  if (mode == "paired_parts_user" || mode == "paired_parts_system")
    return paired_parts(dir, mode, set, parity);
  if (mode != "user" && mode != "system") die("unknown mode " + mode);
  auto setup_start = Clock::now();
  // user: the user cache of `prepare`, no packages; system: an empty user
  // cache, the exported package.
  KcacheSetup kc = mode == "user" ? open_kcache(dir / "cache", dir / "no-system", true)
                                  : open_kcache(dir / "empty-user", dir / "system", true);
  auto loader = kcache::cuda::ModuleLoader::create(*kc.cache, *kc.compiler);
  if (!loader) die(loader.status().message());
  auto target = (*loader)->current_target();
  if (!target) die(target.status().message());
  std::printf("setup %s %.1f\n", mode.c_str(), micros_since(setup_start));
  std::vector<kcache::KernelRequest> requests;
  for (const auto& k : kernels) requests.push_back(request_for(k, kcache::Target{}));
  for (std::size_t i = 0; i < kernels.size(); ++i) {
    auto start = Clock::now();
    auto loaded = (*loader)->get_function(requests[i], kernels[i].names[0]);
    double us = micros_since(start);
    if (!loaded) die(kernels[i].id + ": " + loaded.status().message());
    const bool expected = (mode == "user" && loaded->tier == kcache::TierKind::kUser) ||
                          (mode == "system" && loaded->tier == kcache::TierKind::kSystem);
    if (!expected) {
      die(kernels[i].id + " came from the " + std::string(kcache::tier_name(loaded->tier)) +
          " tier, not " + mode);
    }
    std::printf("%s %s %s %.2f\n", mode.c_str(), set.c_str(), kernels[i].id.c_str(), us);
  }
  return 0;
}

// What a paired run holds: a context, the floor's images and symbols, and
// kcache opened on the tier's folders (`user`: the user cache of `prepare`;
// otherwise an empty one and the exported package) with its loader.
struct Paired {
  Paired(const fs::path& dir, const std::string& set, bool user_tier)
      : kernels(read_kernels(dir, set)), user(user_tier) {
    driver.load();
    driver.make_context();
    // KCACHE_BENCH_FLOOR_OFFSET=K: each floor image K bytes into its
    // buffer (a package's binaries lie at any offset), to see whether the
    // driver's load minds an image's alignment.
    const char* offset_text = std::getenv("KCACHE_BENCH_FLOOR_OFFSET");
    floor_offset = offset_text ? static_cast<std::size_t>(std::atoi(offset_text)) : 0;
    for (const auto& k : kernels) {
      images.push_back(std::vector<std::uint8_t>(floor_offset));
      const auto bytes = read_bytes(dir / "raw" / (k.id + ".cubin"));
      images.back().insert(images.back().end(), bytes.begin(), bytes.end());
      symbols.push_back(read_text(dir / "raw" / (k.id + ".lowered")));
      requests.push_back(request_for(k, kcache::Target{}));
    }
    kc = user ? open_kcache(dir / "cache", dir / "no-system", true)
              : open_kcache(dir / "empty-user", dir / "system", true);
    auto created = kcache::cuda::ModuleLoader::create(*kc.cache, *kc.compiler);
    if (!created) die(created.status().message());
    loader = std::move(*created);
  }
  Driver driver;
  std::vector<Kernel> kernels;
  std::vector<std::vector<std::uint8_t>> images;  // each floor_offset bytes in
  std::size_t floor_offset = 0;
  const std::uint8_t* image(std::size_t i) const { return images[i].data() + floor_offset; }
  std::vector<std::string> symbols;
  bool user;
  KcacheSetup kc;
  std::unique_ptr<kcache::cuda::ModuleLoader> loader;
  std::vector<kcache::KernelRequest> requests;
};

// paired_parts_*: as paired_*, but kcache's turn is the loader's steps done
// by hand and timed apart (Cache::prepare, the tier's get_or_compile, the
// load of the bytes it returned, cuModuleGetFunction), and the floor's turn
// its load and its cuModuleGetFunction apart: where, within one process,
// kcache's time over the floor goes. Lines "q<role>_<part> <set> <id> <us>".
int paired_parts(const fs::path& dir, const std::string& mode, const std::string& set, int parity) {
  Paired p(dir, set, mode == "paired_parts_user");
  const kcache::TierKind expected = p.user ? kcache::TierKind::kUser : kcache::TierKind::kSystem;
  auto target = p.loader->current_target();
  if (!target) die(target.status().message());
  auto& [driver, kernels, images, floor_offset, symbols, user, kc, loader, requests] = p;
  auto print = [&](const char* part, std::size_t i, double us) {
    std::printf("%s %s %s %.2f\n", part, set.c_str(), kernels[i].id.c_str(), us);
  };
  // cuModuleLoadData of `image`, then cuModuleGetFunction of `symbol`,
  // each timed; the same for both roles.
  struct Loaded {
    double load_us;
    double function_us;
  };
  auto load = [&](const void* image, const char* symbol) {
    void* module = nullptr;
    void* function = nullptr;
    auto step = Clock::now();
    driver.check(driver.ModuleLoadData(&module, image), "cuModuleLoadData");
    const double load_us = micros_since(step);
    step = Clock::now();
    driver.check(driver.ModuleGetFunction(&function, module, symbol), "cuModuleGetFunction");
    return Loaded{load_us, micros_since(step)};
  };
  for (std::size_t i = 0; i < kernels.size(); ++i) {
    auto start = Clock::now();
    if ((i + static_cast<std::size_t>(parity)) % 2 == 0) {
      const Loaded floor = load(p.image(i), symbols[i].c_str());
      const double total_us = micros_since(start);
      print("qfloor_load", i, floor.load_us);
      print("qfloor_function", i, floor.function_us);
      print("qfloor_total", i, total_us);
      continue;
    }
    auto prepared = kcache::AdvancedCache(*kc.cache).prepare(requests[i], *target, *kc.compiler);
    if (!prepared) die(kernels[i].id + ": " + prepared.status().message());
    const double key_us = micros_since(start);
    auto step = Clock::now();
    auto cached = kcache::AdvancedCache(*kc.cache).get_or_compile(*prepared, *kc.compiler,
                                                                  {.keep_in_memory = false});
    const double fetch_us = micros_since(step);
    if (!cached || cached->tier != expected) die(kernels[i].id + ": not a " + mode + " hit");
    const Loaded kcache =
        load(cached->binary().data(), cached->lowered_name(kernels[i].names[0]).c_str());
    const double total_us = micros_since(start);
    // Where the bytes the driver loads lie, modulo 64 (a cache line).
    print("qkcache_align", i,
          static_cast<double>(reinterpret_cast<std::uintptr_t>(cached->binary().data()) % 64));
    print("qkcache_key", i, key_us);
    print("qkcache_fetch", i, fetch_us);
    print("qkcache_load", i, kcache.load_us);
    print("qkcache_function", i, kcache.function_us);
    print("qkcache_total", i, total_us);
  }
  return 0;
}

// paired_least: as paired, kcache's turn being the least a mapped system
// tier must do for the kernel (see write_least), on D/least.bin mapped as
// kcache maps a package; "pfloor_least" and "pkcache_least" lines.
int paired_least(const fs::path& dir, const std::string& set, int parity) {
  Paired p(dir, set, /*user_tier=*/false);
  auto& [driver, kernels, images, floor_offset, symbols, user, kc, loader, requests] = p;
  auto target = loader->current_target();
  if (!target) die(target.status().message());
  struct Least {
    std::size_t offset = 0, size = 0, material = 0, metadata = 0;
    std::string text;  // the request's key text, built before the timing
  };
  std::map<std::string, Least> index;
  std::ifstream lines(dir / "least.txt");
  for (std::string id; lines >> id;) {
    Least& least = index[id];
    lines >> least.offset >> least.size >> least.material >> least.metadata;
  }
  std::vector<Least> entries;
  for (const auto& k : kernels) {
    auto found = index.find(k.id);
    if (found == index.end()) die(k.id + " is not in least.txt: prepare again");
    auto keyed = kcache::AdvancedCache(*kc.cache).key_for(request_for(k, *target), *kc.compiler);
    if (!keyed) die(k.id + ": " + keyed.status().message());
    found->second.text = keyed->second.serialize();
    if (found->second.text.size() != found->second.material) die(k.id + ": another key text");
    entries.push_back(std::move(found->second));
  }
  const int fd = ::open((dir / "least.bin").c_str(), O_RDONLY | O_CLOEXEC);
  struct stat st {};
  if (fd < 0 || ::fstat(fd, &st) != 0) die("cannot open least.bin: prepare again");
  void* mapped =
      ::mmap(nullptr, static_cast<std::size_t>(st.st_size), PROT_READ, MAP_SHARED, fd, 0);
  if (mapped == MAP_FAILED) die("cannot map least.bin");
  const auto* base = static_cast<const std::uint8_t*>(mapped);
  for (std::size_t i = 0; i < kernels.size(); ++i) {
    const bool floor = (i + static_cast<std::size_t>(parity)) % 2 == 0;
    auto start = Clock::now();
    void* module = nullptr;
    void* function = nullptr;
    if (floor) {
      driver.check(driver.ModuleLoadData(&module, p.image(i)), "cuModuleLoadData");
    } else {
      const Least& least = entries[i];
      XXH128_canonical_t key;
      XXH128_canonicalFromHash(&key, XXH3_128bits(least.text.data(), least.text.size()));
      const std::uint8_t* entry = base + least.offset;
      const XXH128_canonical_t sum = least_checksum(entry, least.size);
      if (std::memcmp(sum.digest, entry + kLeastChecksum, sizeof sum.digest) != 0 ||
          std::memcmp(key.digest, entry + 16, sizeof key.digest) != 0 ||
          std::memcmp(least.text.data(), entry + kLeastHead, least.text.size()) != 0) {
        die(kernels[i].id + ": the entry does not hold");
      }
      driver.check(
          driver.ModuleLoadData(&module, entry + kLeastHead + least.material + least.metadata),
          "cuModuleLoadData");
    }
    driver.check(driver.ModuleGetFunction(&function, module, symbols[i].c_str()),
                 "cuModuleGetFunction");
    const double us = micros_since(start);
    std::printf("%s_least %s %s %.2f\n", floor ? "pfloor" : "pkcache", set.c_str(),
                kernels[i].id.c_str(), us);
  }
  ::munmap(mapped, static_cast<std::size_t>(st.st_size));
  ::close(fd);
  return 0;
}

int paired(const fs::path& dir, const std::string& mode, const std::string& set, int parity) {
  Paired p(dir, set, mode == "paired_user");
  auto& [driver, kernels, images, floor_offset, symbols, user, kc, loader, requests] = p;
  const std::string tier = user ? "user" : "system";
  // Page faults each role takes in its turns (read outside the timed
  // span): a first touch of a mapped page is a fault the floor's bytes,
  // read into memory beforehand, never take.
  long faults[2] = {0, 0};
  auto minor_faults = [] {
    rusage usage{};
    ::getrusage(RUSAGE_THREAD, &usage);
    return usage.ru_minflt + usage.ru_majflt;
  };
  for (std::size_t i = 0; i < kernels.size(); ++i) {
    const bool floor = (i + static_cast<std::size_t>(parity)) % 2 == 0;
    const long faults_before = minor_faults();
    auto start = Clock::now();
    if (floor) {
      void* module = nullptr;
      void* function = nullptr;
      driver.check(driver.ModuleLoadData(&module, p.image(i)), "cuModuleLoadData");
      driver.check(driver.ModuleGetFunction(&function, module, symbols[i].c_str()),
                   "cuModuleGetFunction");
    } else {
      auto loaded = loader->get_function(requests[i], kernels[i].names[0]);
      if (!loaded) die(kernels[i].id + ": " + loaded.status().message());
      if (std::string(kcache::tier_name(loaded->tier)) != tier) {
        die(kernels[i].id + " came from the " + std::string(kcache::tier_name(loaded->tier)) +
            " tier, not " + tier);
      }
    }
    const double us = micros_since(start);
    faults[floor ? 0 : 1] += minor_faults() - faults_before;
    std::printf("%s_%s %s %s %.2f\n", floor ? "pfloor" : "pkcache", tier.c_str(), set.c_str(),
                kernels[i].id.c_str(), us);
  }
  // "faults <role> <set> <faults> <turns>", after every timing line.
  const std::size_t kcache_turns = (kernels.size() + (parity % 2 ? 1 : 0)) / 2;
  std::printf("faults pfloor_%s %s %ld %zu\n", tier.c_str(), set.c_str(), faults[0],
              kernels.size() - kcache_turns);
  std::printf("faults pkcache_%s %s %ld %zu\n", tier.c_str(), set.c_str(), faults[1], kcache_turns);
  return 0;
}

int nvrtc_only(const fs::path& dir, const std::string& set, const std::string& arch) {
  kcache::CompilerConfig config;
  config.backend = "nvrtc";
  auto compiler = kcache::make_compiler(config);
  if (!compiler) die(compiler.status().message());
  auto target = (*compiler)->resolve_target(*kcache::Target::parse(arch));
  if (!target) die(target.status().message());
  for (const auto& k : read_kernels(dir, set)) {
    auto start = Clock::now();
    auto out = (*compiler)->compile(request_for(k, *target), *target);
    double us = micros_since(start);
    if (!out) die(k.id + ": " + out.status().message());
    std::printf("nvrtc %s %s %.1f\n", k.set.c_str(), k.id.c_str(), us);
  }
  return 0;
}

// What the host's basic operations cost, to read the other figures by:
// kcache's hit reads the clock, makes a system call or two and touches a
// few kilobytes, and these differ between hosts more than code does (a
// virtual machine's clock may not be read in user space).
int host_costs() {
  std::ifstream source("/sys/devices/system/clocksource/clocksource0/current_clocksource");
  std::string clock_source = "unknown";
  source >> clock_source;
  std::printf("clocksource %s\n", clock_source.c_str());
  constexpr int kRounds = 200000;
  auto per_call_ns = [](auto&& op) {
    double best = 1e30;
    for (int trial = 0; trial < 5; ++trial) {
      auto start = Clock::now();
      for (int i = 0; i < kRounds; ++i) op();
      best = std::min(
          best, std::chrono::duration<double, std::nano>(Clock::now() - start).count() / kRounds);
    }
    return best;
  };
  volatile long sink = 0;
  std::printf("host steady_clock_now_ns %.1f\n",
              per_call_ns([&] { sink = Clock::now().time_since_epoch().count(); }));
  std::printf("host getppid_ns %.1f\n", per_call_ns([&] { sink = getppid(); }));
  const std::string self = "/proc/self/exe";
  std::FILE* file = std::fopen(self.c_str(), "rb");
  if (file == nullptr) die("cannot open " + self);
  struct stat st {};
  std::printf("host fstat_ns %.1f\n",
              per_call_ns([&] { sink = ::fstat(fileno(file), &st) + st.st_size; }));
  std::fclose(file);
  std::vector<char> from(64 << 10, 1), to(64 << 10);
  std::printf("host memcpy_64k_ns %.1f\n", per_call_ns([&] {
                std::memcpy(to.data(), from.data(), from.size());
                sink = to[static_cast<std::size_t>(sink) % to.size()];
              }));
  return 0;
}

}  // namespace

int main(int argc, char** argv) {
  if (argc >= 2 && std::string(argv[1]) == "host") return host_costs();
  if (argc < 2) die("usage: cuda_load_bench gen|prepare|measure|nvrtc|host --dir D [...]");
  std::map<std::string, std::string> args;
  for (int i = 2; i + 1 < argc; i += 2) args[argv[i]] = argv[i + 1];
  const std::string command = argv[1];
  if (!args.contains("--dir")) die("--dir is required");
  const fs::path dir = args["--dir"];
  if (command == "gen") {
    int small = args.contains("--small") ? std::stoi(args["--small"]) : 40;
    int big = args.contains("--big") ? std::stoi(args["--big"]) : 8;
    write_kernels(dir, make_kernels(small, big));
    std::printf("wrote %d small and %d big kernels to %s\n", small, big, dir.c_str());
    return 0;
  }
  if (command == "prepare") return prepare(dir, args["--target"]);
  if (command == "measure") {
    return measure(dir, args["--mode"], args["--set"],
                   args.contains("--parity") ? std::stoi(args["--parity"]) : 0);
  }
  if (command == "nvrtc")
    return nvrtc_only(dir, args["--set"], args.contains("--arch") ? args["--arch"] : "sm_90");
  die("unknown command " + command);
}
