// hipRTC compiles without an AMD GPU: these run for real wherever
// libamdhip64 is (CI installs ROCm's libamdhip64-5) and skip, saying why,
// where it is not (fail, where KCACHE_REQUIRE_BACKENDS names hip, as in
// CI). The crash-safety tests that use a fake worker run everywhere.
#include <gtest/gtest.h>
#include <link.h>
#include <sys/stat.h>

#include <kcache/advanced.h>
#include <kcache/cache.h>

#include <chrono>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <optional>

#include "compiler/registry.h"
#include "core/cache_internal.h"
#include "fakes/fault_env.h"
#include "fakes/required_backends.h"
#include "fakes/scoped_env.h"
#include "fakes/temp_folder.h"

namespace kcache {
namespace {

using testing::ScopedEnv;
using testing::TempFolder;

constexpr const char* kKernels = R"(
template <int N>
__global__ void scale(float* x) { x[threadIdx.x] *= N; }
extern "C" __global__ void vadd(const float* a, const float* b, float* c) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  c[i] = a[i] + b[i];
}
)";

std::string field(const CompileOutput& out, const std::string& name) {
  for (const auto& [key, value] : out.metadata) {
    if (key == name) return value;
  }
  return {};
}

std::uint32_t read_le(const std::vector<std::uint8_t>& bytes, std::size_t offset, int size) {
  std::uint32_t value = 0;
  for (int i = size - 1; i >= 0; --i) value = (value << 8) | bytes.at(offset + i);
  return value;
}

// Whether an object whose file name holds `needle` is loaded in this process.
bool loaded_here(const char* needle) {
  struct Search {
    const char* needle;
    bool found;
  } search{needle, false};
  ::dl_iterate_phdr(
      [](struct dl_phdr_info* info, std::size_t, void* data) {
        auto* s = static_cast<Search*>(data);
        s->found = s->found || (info->dlpi_name && std::strstr(info->dlpi_name, s->needle));
        return 0;
      },
      &search);
  return search.found;
}

std::vector<std::string> entries_of(const std::string& dir) {
  std::vector<std::string> names;
  std::error_code error;
  for (const auto& entry : std::filesystem::recursive_directory_iterator(dir, error)) {
    names.push_back(entry.path().string());
  }
  return names;
}

class HipCompilerTest : public ::testing::Test {
 protected:
  void SetUp() override {
    CompilerConfig config;
    config.backend = "hip";
    auto made = make_compiler(config);
    if (!made) {
      // The worker is built with kcache: its absence is a failure, not a skip.
      ASSERT_EQ(made.status().message().find("kcache-hip-worker"), std::string::npos)
          << made.status().message();
      KCACHE_SKIP_OR_FAIL_BACKEND("hip", "no hipRTC (libamdhip64): " << made.status().message());
    }
    compiler = std::move(*made);
  }
  Result<CompileOutput> compile(const KernelRequest& request, const char* target_text) {
    auto target = compiler->resolve_target(*Target::parse(target_text));
    if (!target) return target.status();
    return compiler->compile(request, *target);
  }
  std::unique_ptr<Cache> open_cache(const TempFolder& dir) {
    env.vars["KCACHE_CUSTOM_CACHE_DIR"] = dir / "cache";
    env.vars["KCACHE_SYSTEM_DB_PATH"] = dir / "system";
    env.vars["KCACHE_LOG_LEVEL"] = "error";
    env.home = dir.path();
    return std::move(*open_cache_with_env({}, env));
  }
  std::unique_ptr<Compiler> compiler;
  testing::FaultEnv env;
};

TEST_F(HipCompilerTest, CodeObjectForEachTarget) {
  KernelRequest request;
  request.source = kKernels;
  // EF_AMDGPU_MACH (the low byte of e_flags) of each processor.
  const std::pair<const char*, std::uint32_t> targets[] = {
      {"gfx906", 0x2f}, {"gfx90a", 0x3f}, {"gfx1030", 0x36}};
  for (const auto& [target, mach] : targets) {
    const auto start = std::chrono::steady_clock::now();
    auto out = compile(request, target);
    const auto ms =
        std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - start).count();
    ASSERT_TRUE(out.is_ok()) << target << ": " << out.status().message() << "\n"
                             << out.status().details();
    const auto& code = out->binary;
    ASSERT_GT(code.size(), 64u) << target;
    EXPECT_EQ(std::string(code.begin(), code.begin() + 4),
              "\x7f"
              "ELF")
        << target;
    EXPECT_EQ(read_le(code, 18, 2), 0xE0u) << target << ": e_machine is not EM_AMDGPU";
    EXPECT_EQ(read_le(code, 48, 4) & 0xffu, mach) << target << ": e_flags";
    EXPECT_EQ(field(*out, kFormatField), "hsaco");
    RecordProperty(std::string("compile_ms_") + target, static_cast<int>(ms));
    std::cout << "hipRTC " << target << ": " << code.size() << " bytes in " << ms << " ms\n";
  }
}

TEST_F(HipCompilerTest, FeaturesReachTheCodeObjectAndTheKey) {
  TempFolder dir;
  auto cache = open_cache(dir);
  KernelRequest request;
  request.source = kKernels;
  request.target = *Target::parse("gfx90a");
  auto plain = AdvancedCache(*cache).key_for(request, *compiler);
  request.target = *Target::parse("gfx90a:xnack-:sramecc+");
  auto featured = AdvancedCache(*cache).key_for(request, *compiler);
  request.target = *Target::parse("gfx90a:sramecc+:xnack-");
  auto canonical = AdvancedCache(*cache).key_for(request, *compiler);
  ASSERT_TRUE(plain.is_ok() && featured.is_ok() && canonical.is_ok());
  EXPECT_NE(plain->first, featured->first);
  EXPECT_EQ(featured->first, canonical->first);
  bool has_features = false;
  for (const auto& f : featured->second.fields()) {
    has_features = has_features || (f.name == "target.features" && f.value == "sramecc+:xnack-");
  }
  EXPECT_TRUE(has_features) << featured->second.serialize();

  // The features reach the compiler: e_flags say xnack off, sramecc on.
  auto any = compile(request, "gfx90a");
  auto set = compile(request, "gfx90a:xnack-:sramecc+");
  ASSERT_TRUE(any.is_ok() && set.is_ok()) << set.status().message() << set.status().details();
  constexpr std::uint32_t kXnackMask = 0x300;  // EF_AMDGPU_FEATURE_XNACK_V4
  constexpr std::uint32_t kSrameccMask = 0xc00;
  const std::uint32_t flags_any = read_le(any->binary, 48, 4);
  const std::uint32_t flags_set = read_le(set->binary, 48, 4);
  EXPECT_NE(flags_any, flags_set);
  EXPECT_EQ(flags_set & kXnackMask, 0x200u);    // off
  EXPECT_EQ(flags_set & kSrameccMask, 0xc00u);  // on
}

TEST_F(HipCompilerTest, NameExpressionsAreLoweredAndStored) {
  TempFolder dir;
  KernelRequest request;
  request.source = kKernels;
  request.kernel_names = {"scale<16>", "scale<32>", "vadd"};
  request.target = *Target::parse("gfx906_60");
  auto first = open_cache(dir)->get_or_compile(request, *compiler);
  ASSERT_TRUE(first.is_ok()) << first.status().message() << first.status().details();
  EXPECT_EQ(first->tier, TierKind::kCompiled);
  EXPECT_EQ(first->lowered_name("scale<16>"), "_Z5scaleILi16EEvPf");
  EXPECT_EQ(first->lowered_name("scale<32>"), "_Z5scaleILi32EEvPf");
  EXPECT_EQ(first->lowered_name("vadd"), "vadd");
  auto again = open_cache(dir)->get_or_compile(request, *compiler);
  ASSERT_TRUE(again.is_ok());
  EXPECT_EQ(again->tier, TierKind::kUser);
  EXPECT_EQ(again->lowered_name("scale<32>"), "_Z5scaleILi32EEvPf");
  EXPECT_EQ(again->metadata(kFormatField), "hsaco");
  EXPECT_EQ(again->db, "gfx906_60");
}

TEST_F(HipCompilerTest, CompileErrorCarriesTheLog) {
  KernelRequest request;
  request.source = "__global__ void k(float* x) { x[0] = not_declared; }";
  auto out = compile(request, "gfx906");
  ASSERT_FALSE(out.is_ok());
  EXPECT_EQ(out.status().code(), StatusCode::kCompileError);
  EXPECT_NE(out.status().details().find("not_declared"), std::string::npos)
      << out.status().details();
  // The log does not point into the worker's deleted temporary folder.
  EXPECT_EQ(out.status().details().find("comgr-"), std::string::npos) << out.status().details();
}

TEST_F(HipCompilerTest, InMemoryAndOnDiskHeaders) {
  TempFolder dir;
  testing::write_file(dir / "inc/disk.h", "#define OFFSET 1.0f\n");
  KernelRequest request;
  request.source = R"(
#include "params.h"
#include <disk.h>
extern "C" __global__ void h(float* x) { x[threadIdx.x] = SCALE + OFFSET; })";
  request.headers = {{"params.h", "#define SCALE 2.0f\n"}};
  request.include_dirs = {dir / "inc"};
  auto out = compile(request, "gfx906");
  ASSERT_TRUE(out.is_ok()) << out.status().message() << "\n" << out.status().details();
  EXPECT_TRUE(compiler->inputs().toolkit_dirs.empty());
}

TEST_F(HipCompilerTest, TargetsAndOptionsAreChecked) {
  const auto code_of = [&](const char* text) {
    return compiler->resolve_target(*Target::parse(text)).status().code();
  };
  EXPECT_EQ(compiler->resolve_target({}).status().code(), StatusCode::kInvalidArgument);
  EXPECT_EQ(code_of("sm_90"), StatusCode::kInvalidArgument);
  EXPECT_EQ(code_of("gfx9zz"), StatusCode::kInvalidArgument);
  EXPECT_EQ(code_of("gfx90a:foo+"), StatusCode::kInvalidArgument);
  EXPECT_EQ(code_of("gfx1030:xnack+"), StatusCode::kInvalidArgument);  // gfx1030 has no xnack
  EXPECT_EQ(code_of("gfx906:xnack+:xnack-"), StatusCode::kInvalidArgument);
  auto triple = compiler->resolve_target(*Target::parse("amdgcn-amd-amdhsa--gfx906"));
  ASSERT_TRUE(triple.is_ok()) << triple.status().message();
  EXPECT_EQ(triple->arch, "gfx906");
  auto units = compiler->resolve_target(*Target::parse("gfx90a_110:xnack-"));
  ASSERT_TRUE(units.is_ok()) << units.status().message();
  EXPECT_EQ(units->to_string(), "gfx90a_110:xnack-");

  KernelRequest request;
  request.source = "__global__ void k() {}";
  for (const char* option :
       {"--offload-arch=gfx90a", "--gpu-architecture=gfx90a", "-mcpu=gfx90a"}) {
    request.options = option;
    EXPECT_EQ(compile(request, "gfx906").status().code(), StatusCode::kInvalidArgument) << option;
  }
  EXPECT_EQ(compiler->identity().backend, "hip");
  EXPECT_EQ(compiler->identity().id, "hiprtc");
  EXPECT_TRUE(compiler->identity().version.starts_with("hiprtc ")) << compiler->identity().version;
  // The build (libamdhip64 and comgr, by build-id), not only hipRTC's
  // "9.0".
  EXPECT_NE(compiler->identity().version.find("; comgr "), std::string::npos)
      << compiler->identity().version;
  EXPECT_NE(compiler->identity().version.find("; build sha256:"), std::string::npos);
}

#ifdef KCACHE_TEST_HIP_WORKER
// The worker is kcache's own program: which build of it runs a compile is
// no part of the key (the protocol it speaks is), so a HIP package packed
// by one kcache build fits another's. Until 2026-12-06 the worker's file
// was part of the build, and every kcache build had HIP keys of its own.
TEST_F(HipCompilerTest, AnotherBuildOfTheWorkerKeysAlike) {
  EXPECT_NE(compiler->identity().version.find("; worker protocol 1;"), std::string::npos)
      << compiler->identity().version;
  TempFolder dir;
  const std::string copy = dir / "kcache-hip-worker";
  {
    std::ifstream in(KCACHE_TEST_HIP_WORKER, std::ios::binary);
    std::ofstream out(copy, std::ios::binary);
    out << in.rdbuf() << "another build";  // other bytes, another size: still a program
  }
  ASSERT_EQ(::chmod(copy.c_str(), 0755), 0);
  ScopedEnv worker("KCACHE_HIP_WORKER", copy);
  CompilerConfig config;
  config.backend = "hip";
  auto other = make_compiler(config);
  ASSERT_TRUE(other.is_ok()) << other.status().message();
  EXPECT_EQ((*other)->identity().version, compiler->identity().version);
}
#endif

// ROCm 5.2's comgr does not list gfx1100, and its hipRTC aborts the process
// that asks for it. resolve_target refuses it up front; compile, called
// directly, runs into the crash in the worker, and this process goes on.
TEST_F(HipCompilerTest, Gfx1100NeverTakesTheProcessDown) {
  auto refused = compiler->resolve_target(*Target::parse("gfx1100"));
  if (refused.is_ok()) GTEST_SKIP() << "this ROCm compiles for gfx1100";
  EXPECT_EQ(refused.status().code(), StatusCode::kUnavailable);
  EXPECT_NE(refused.status().message().find("gfx1100"), std::string::npos);
  EXPECT_NE(refused.status().message().find("gfx906"), std::string::npos);  // what it supports

  TempFolder dir;
  KernelRequest request;
  request.source = kKernels;
  request.target = *Target::parse("gfx1100");
  auto through_cache = open_cache(dir)->get_or_compile(request, *compiler);
  EXPECT_EQ(through_cache.status().code(), StatusCode::kUnavailable);

  {
    ScopedEnv tmpdir("TMPDIR", dir / "tmp");
    ::mkdir((dir / "tmp").c_str(), 0700);
    auto crashed = compiler->compile(request, Target{"gfx1100", "", 0});
    ASSERT_FALSE(crashed.is_ok());
    EXPECT_EQ(crashed.status().code(), StatusCode::kCompileError);
    const std::string& message = crashed.status().message();
    std::cout << "the crash, as the caller sees it: " << message << "\n"
              << crashed.status().details() << "\n";
    EXPECT_NE(message.find("crashed"), std::string::npos) << message;
    EXPECT_NE(message.find("signal 6"), std::string::npos) << message;
    EXPECT_NE(message.find("gfx1100"), std::string::npos) << message;
    // Nothing is left behind: no request folder, no comgr-* of the crash.
    EXPECT_EQ(entries_of(dir / "tmp"), std::vector<std::string>{});
  }
  // Still alive, still compiling, and hipRTC never ran in this process.
  auto fine = compile(request, "gfx906");
  EXPECT_TRUE(fine.is_ok()) << fine.status().message();
  EXPECT_FALSE(loaded_here("libamdhip64"));
  EXPECT_FALSE(loaded_here("libamd_comgr"));
}

// A fake worker that answers the probe, then aborts on every compile the
// way hipRTC does, after leaving a comgr-* folder in its TMPDIR.
class HipCrashingWorkerTest : public ::testing::Test {
 protected:
  void SetUp() override {
    const std::string script = dir / "crashing-worker";
    testing::write_file(script, R"(#!/bin/sh
if [ "$1" = probe ]; then
  printf 'status 2\nok\nlibrary_path 14\n/fake/libhip.0\nhiprtc_version 3\n9.0\nisa 6\ngfx906\n' >"$2/result"
  exit 0
fi
mkdir -p "$2/tmp/comgr-a1b2c3/input"
echo "munmap_chunk(): invalid pointer" >&2
kill -ABRT $$
)");
    ::chmod(script.c_str(), 0755);
    worker.emplace("KCACHE_HIP_WORKER", script);
  }
  TempFolder dir;
  std::optional<ScopedEnv> worker;
};

TEST_F(HipCrashingWorkerTest, ACrashIsACompileErrorAndLeavesNothingBehind) {
  CompilerConfig config;
  config.backend = "hip";
  auto compiler = make_compiler(config);
  ASSERT_TRUE(compiler.is_ok()) << compiler.status().message() << compiler.status().details();
  EXPECT_TRUE(
      (*compiler)->identity().version.starts_with("hiprtc 9.0; worker protocol 1; build sha256:"))
      << (*compiler)->identity().version;
  EXPECT_EQ((*compiler)->resolve_target(*Target::parse("gfx90a")).status().code(),
            StatusCode::kUnavailable);  // the fake lists gfx906 only

  ScopedEnv tmpdir("TMPDIR", dir / "tmp");
  ::mkdir((dir / "tmp").c_str(), 0700);
  KernelRequest request;
  request.source = kKernels;
  request.target = *Target::parse("gfx906");
  for (int attempt = 0; attempt < 2; ++attempt) {
    auto out = (*compiler)->compile(request, *(*compiler)->resolve_target(request.target));
    ASSERT_FALSE(out.is_ok());
    EXPECT_EQ(out.status().code(), StatusCode::kCompileError);
    EXPECT_NE(out.status().message().find("hipRTC crashed (signal 6"), std::string::npos)
        << out.status().message();
    EXPECT_NE(out.status().message().find("gfx906"), std::string::npos);
    EXPECT_NE(out.status().details().find("munmap_chunk"), std::string::npos)
        << out.status().details();
    EXPECT_EQ(entries_of(dir / "tmp"), std::vector<std::string>{});
  }
}

// A fake worker that answers the probe, then hangs on every compile, with a
// child of its own that hangs too.
TEST(HipHungWorkerTest, AHungWorkerIsStoppedAtTheTimeout) {
  TempFolder dir;
  const std::string script = dir / "hung-worker";
  testing::write_file(script, R"(#!/bin/sh
if [ "$1" = probe ]; then
  printf 'status 2\nok\nlibrary_path 14\n/fake/libhip.0\nhiprtc_version 3\n9.1\nisa 6\ngfx906\n' >"$2/result"
  exit 0
fi
echo "comgr: thinking" >&2
sleep 30 &
sleep 30
)");
  ::chmod(script.c_str(), 0755);
  ScopedEnv worker("KCACHE_HIP_WORKER", script);
  CompilerConfig config;
  config.backend = "hip";
  config.timeout = std::chrono::milliseconds(300);
  auto compiler = make_compiler(config);
  ASSERT_TRUE(compiler.is_ok()) << compiler.status().message() << compiler.status().details();

  ScopedEnv tmpdir("TMPDIR", dir / "tmp");
  ::mkdir((dir / "tmp").c_str(), 0700);
  KernelRequest request;
  request.source = kKernels;
  const auto start = std::chrono::steady_clock::now();
  auto out = (*compiler)->compile(request, *(*compiler)->resolve_target(*Target::parse("gfx906")));
  EXPECT_LT(std::chrono::steady_clock::now() - start, std::chrono::seconds(5));
  ASSERT_FALSE(out.is_ok());
  EXPECT_EQ(out.status().code(), StatusCode::kTimeout) << out.status().to_string();
  const std::string& message = out.status().message();
  EXPECT_NE(message.find("gfx906"), std::string::npos) << message;
  EXPECT_NE(message.find("did not finish within 0.3 s"), std::string::npos) << message;
  EXPECT_NE(out.status().details().find("comgr: thinking"), std::string::npos)
      << out.status().details();
  EXPECT_EQ(entries_of(dir / "tmp"), std::vector<std::string>{});
}

TEST(HipMissingTest, AMissingLibraryIsNamed) {
  CompilerConfig config;
  config.backend = "hip";
  config.hip_library = "/nonexistent/libamdhip64.so.99";
  auto made = make_compiler(config);  // a named library is the only one tried
  ASSERT_FALSE(made.is_ok());
  EXPECT_EQ(made.status().code(), StatusCode::kUnavailable);
  EXPECT_NE(made.status().message().find("/nonexistent/libamdhip64.so.99"), std::string::npos)
      << made.status().message();
}

// KCACHE_HIP_LIBRARY (the hip_library setting, which make_compiler hands
// the backend) names the only library tried; the program's comes first.
TEST(HipMissingTest, TheSettingNamesTheOnlyLibraryTried) {
  ScopedEnv library("KCACHE_HIP_LIBRARY", "/nonexistent/libamdhip64.so.98");
  CompilerConfig config;
  config.backend = "hip";
  auto made = make_compiler(config);
  ASSERT_FALSE(made.is_ok());
  EXPECT_EQ(made.status().code(), StatusCode::kUnavailable);
  EXPECT_NE(made.status().message().find("/nonexistent/libamdhip64.so.98"), std::string::npos)
      << made.status().message();
  config.hip_library = "/nonexistent/libamdhip64.so.99";
  made = make_compiler(config);
  ASSERT_FALSE(made.is_ok());
  EXPECT_NE(made.status().message().find("/nonexistent/libamdhip64.so.99"), std::string::npos)
      << made.status().message();
  EXPECT_EQ(made.status().message().find("so.98"), std::string::npos) << made.status().message();
}

TEST(HipMissingTest, AMissingWorkerIsNamed) {
  ScopedEnv worker("KCACHE_HIP_WORKER", "/nonexistent/kcache-hip-worker");
  CompilerConfig config;
  config.backend = "hip";
  auto made = make_compiler(config);
  ASSERT_FALSE(made.is_ok());
  EXPECT_EQ(made.status().code(), StatusCode::kUnavailable);
  EXPECT_NE(made.status().message().find("/nonexistent/kcache-hip-worker"), std::string::npos)
      << made.status().message();
}

}  // namespace
}  // namespace kcache
