// NVRTC compiles without a GPU: these run for real wherever libnvrtc is
// and skip, saying why, where it is not. CI installs Debian's libnvrtc11.2
// (NVRTC 11.8, no toolkit headers; scripts/install-ci-extras.sh) and sets
// KCACHE_REQUIRE_BACKENDS=nvrtc, which turns the skip into a failure.
#include <gtest/gtest.h>

#include <kcache/cache.h>

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

class NvrtcCompilerTest : public ::testing::Test {
 protected:
  void SetUp() override {
    CompilerConfig config;
    config.backend = "nvrtc";
    auto made = make_compiler(config);
    if (!made) KCACHE_SKIP_OR_FAIL_BACKEND("nvrtc", "no NVRTC: " << made.status().message());
    compiler = std::move(*made);
  }
  Result<CompileOutput> compile(const KernelRequest& request, const char* arch) {
    auto target = compiler->resolve_target(*Target::parse(arch));
    if (!target) return target.status();
    return compiler->compile(request, *target);
  }
  std::unique_ptr<Compiler> compiler;
};

constexpr const char* kTemplated = R"(
template <int TS>
__global__ void scale(float* x, float a) { x[blockIdx.x * TS + threadIdx.x] *= a; }
)";

std::string field(const CompileOutput& out, const std::string& name) {
  for (const auto& [key, value] : out.metadata) {
    if (key == name) return value;
  }
  return {};
}

TEST_F(NvrtcCompilerTest, CubinForRealArchPtxForVirtual) {
  KernelRequest request;
  request.source = "extern \"C\" __global__ void k(float* x) { x[threadIdx.x] = 1.0f; }";
  auto cubin = compile(request, "sm_90");
  ASSERT_TRUE(cubin.is_ok()) << cubin.status().message() << cubin.status().details();
  ASSERT_GT(cubin->binary.size(), 4u);
  EXPECT_EQ(std::string(cubin->binary.begin(), cubin->binary.begin() + 4),
            "\x7f"
            "ELF");
  EXPECT_EQ(field(*cubin, kFormatField), "cubin");
  auto ptx = compile(request, "compute_90");
  ASSERT_TRUE(ptx.is_ok());
  EXPECT_EQ(field(*ptx, kFormatField), "ptx");
  EXPECT_NE(std::string(ptx->binary.begin(), ptx->binary.end()).find(".visible .entry k"),
            std::string::npos);
}

TEST_F(NvrtcCompilerTest, NameExpressionsAreLoweredAndStored) {
  TempFolder dir;
  testing::FaultEnv env;
  env.vars["KCACHE_CUSTOM_CACHE_DIR"] = dir / "cache";
  env.vars["KCACHE_SYSTEM_DB_PATH"] = dir / "system";
  env.vars["KCACHE_LOG_LEVEL"] = "error";
  env.home = dir.path();
  KernelRequest request;
  request.source = kTemplated;
  request.kernel_names = {"scale<16>", "scale<32>"};
  request.target = *Target::parse("sm_90_132");
  auto first = (*open_cache_with_env({}, env))->get_or_compile(request, *compiler);
  ASSERT_TRUE(first.is_ok()) << first.status().details();
  EXPECT_EQ(first->lowered_name("scale<16>"), "_Z5scaleILi16EEvPff");
  EXPECT_EQ(first->lowered_name("scale<32>"), "_Z5scaleILi32EEvPff");
  auto again = (*open_cache_with_env({}, env))->get_or_compile(request, *compiler);
  ASSERT_TRUE(again.is_ok());
  EXPECT_EQ(again->tier, TierKind::kUser);
  EXPECT_EQ(again->lowered_name("scale<32>"), "_Z5scaleILi32EEvPff");
  EXPECT_EQ(again->db, "sm_90_132");
}

TEST_F(NvrtcCompilerTest, CompileErrorCarriesTheLog) {
  KernelRequest request;
  request.source = "__global__ void k(float* x) { x[0] = not_declared; }";
  auto out = compile(request, "sm_90");
  ASSERT_FALSE(out.is_ok());
  EXPECT_EQ(out.status().code(), StatusCode::kCompileError);
  EXPECT_NE(out.status().details().find("not_declared"), std::string::npos)
      << out.status().details();
}

TEST_F(NvrtcCompilerTest, InMemoryHeaders) {
  KernelRequest request;
  request.source = R"(
#include "params.h"
extern "C" __global__ void h(int* x) { x[threadIdx.x] = SCALE; })";
  request.headers = {{"params.h", "#define SCALE 424242\n"}};
  auto out = compile(request, "compute_90");
  ASSERT_TRUE(out.is_ok()) << out.status().message() << "\n" << out.status().details();
  // The header's value reached the compiler: the PTX stores the constant.
  const std::string ptx(out->binary.begin(), out->binary.end());
  EXPECT_NE(ptx.find("424242"), std::string::npos) << ptx;
  request.headers.clear();
  EXPECT_EQ(compile(request, "compute_90").status().code(), StatusCode::kCompileError);
}

// Needs the toolkit's headers (beside libnvrtc, or in $CUDA_HOME): Debian's
// libnvrtc11.2, which CI installs, comes without them, so there it skips.
TEST_F(NvrtcCompilerTest, ToolkitHeaders) {
  if (compiler->inputs().toolkit_dirs.empty()) {
    GTEST_SKIP() << "no CUDA toolkit headers beside " << compiler->identity().version
                 << " or in $CUDA_HOME; <cuda_fp16.h> cannot be found";
  }
  for (const auto& dir : compiler->inputs().toolkit_dirs) EXPECT_FALSE(dir.empty());
  KernelRequest request;
  request.source = R"(
#include <cuda_fp16.h>
#include "params.h"
__global__ void h(__half* x) { x[threadIdx.x] = __float2half(SCALE); })";
  request.headers = {{"params.h", "#define SCALE 2.0f\n"}};
  auto out = compile(request, "sm_90");
  ASSERT_TRUE(out.is_ok()) << out.status().message() << "\n" << out.status().details();
}

// The program's name, when the request gives one, is the name NVRTC
// compiles it under (__FILE__ shows it); unset, kcache's own.
TEST_F(NvrtcCompilerTest, TheSourceNameIsTheProgramName) {
  KernelRequest request;
  request.source =
      "__device__ const char* where = __FILE__;\n"
      "extern \"C\" __global__ void k(const char** out) { *out = where; }\n";
  request.source_name = "named_probe.cu";
  auto named = compile(request, "compute_80");
  ASSERT_TRUE(named.is_ok()) << named.status().message() << named.status().details();
  const std::string ptx(named->binary.begin(), named->binary.end());
  // __FILE__ is a string constant in the PTX, its bytes written in decimal.
  std::string bytes;
  for (char c : std::string("named_probe")) bytes += std::to_string(int(c)) + ", ";
  EXPECT_NE(ptx.find(bytes.substr(0, bytes.size() - 2)), std::string::npos) << ptx;
  request.source_name.reset();
  auto unnamed = compile(request, "compute_80");
  ASSERT_TRUE(unnamed.is_ok());
  EXPECT_EQ(std::string(unnamed->binary.begin(), unnamed->binary.end())
                .find(bytes.substr(0, bytes.size() - 2)),
            std::string::npos);
}

// nvrtc_toolkit_include = false: no folder of the toolkit is searched
// (nor keyed as the toolkit's): the compile is the call as spelled.
TEST(NvrtcAsCalledTest, NoToolkitFolderIsAdded) {
  CompilerConfig config;
  config.backend = "nvrtc";
  config.nvrtc_toolkit_include = false;
  auto made = make_compiler(config);
  if (!made) KCACHE_SKIP_OR_FAIL_BACKEND("nvrtc", "no NVRTC: " << made.status().message());
  EXPECT_TRUE((*made)->inputs().toolkit_dirs.empty());
  config.nvrtc_toolkit_include = true;
  auto with_toolkit = make_compiler(config);
  ASSERT_TRUE(with_toolkit.is_ok());
  EXPECT_EQ((*made)->identity().version, (*with_toolkit)->identity().version);
}

TEST_F(NvrtcCompilerTest, HeaderOnDiskChangesTheKey) {
  TempFolder dir;
  testing::write_file(dir / "inc/p.h", "#define SCALE 1.0f\n");
  testing::FaultEnv env;
  env.vars["KCACHE_CUSTOM_CACHE_DIR"] = dir / "cache";
  env.vars["KCACHE_SYSTEM_DB_PATH"] = dir / "system";
  env.vars["KCACHE_LOG_LEVEL"] = "error";
  env.home = dir.path();
  KernelRequest request;
  request.source = "#include <p.h>\nextern \"C\" __global__ void k(float* x) { x[0] = SCALE; }";
  request.options = "--include-path=" + (dir / "inc");
  request.target = *Target::parse("sm_90");
  auto cache = *open_cache_with_env({}, env);
  auto first = cache->get_or_compile(request, *compiler);
  ASSERT_TRUE(first.is_ok()) << first.status().details();
  testing::write_file(dir / "inc/p.h", "#define SCALE 2.0f\n");
  auto second = cache->get_or_compile(request, *compiler);
  ASSERT_TRUE(second.is_ok());
  EXPECT_EQ(second->tier, TierKind::kCompiled);
  EXPECT_NE(first->key, second->key);
  EXPECT_NE(std::vector<std::uint8_t>(first->binary().begin(), first->binary().end()),
            std::vector<std::uint8_t>(second->binary().begin(), second->binary().end()));
}

TEST_F(NvrtcCompilerTest, TargetsAndOptionsAreChecked) {
  EXPECT_EQ(compiler->resolve_target({}).status().code(), StatusCode::kInvalidArgument);
  // sm_30: dropped in CUDA 11.0, so no NVRTC kcache can load compiles for it.
  auto old = compiler->resolve_target(*Target::parse("sm_30"));
  EXPECT_EQ(old.status().code(), StatusCode::kInvalidArgument);
  EXPECT_NE(old.status().message().find("sm_90"), std::string::npos);  // lists what it supports
  EXPECT_EQ(compiler->resolve_target(*Target::parse("gfx906")).status().code(),
            StatusCode::kInvalidArgument);
  EXPECT_TRUE(compiler->resolve_target(*Target::parse("sm_90a_132")).is_ok());
  KernelRequest request;
  request.source = "__global__ void k() {}";
  request.options = "-arch=sm_80";
  EXPECT_EQ(compile(request, "sm_90").status().code(), StatusCode::kInvalidArgument);
  EXPECT_TRUE(compiler->identity().version.starts_with("nvrtc "));
}

TEST(NvrtcMissingTest, AMissingLibraryIsNamed) {
  CompilerConfig config;
  config.backend = "nvrtc";
  config.nvrtc_library = "/nonexistent/libnvrtc.so.99";
  auto made = make_compiler(config);  // a named library is the only one tried
  ASSERT_FALSE(made.is_ok());
  EXPECT_EQ(made.status().code(), StatusCode::kUnavailable);
  EXPECT_NE(made.status().message().find("/nonexistent/libnvrtc.so.99"), std::string::npos)
      << made.status().message();
}

// KCACHE_NVRTC_LIBRARY (the nvrtc_library setting, which make_compiler
// hands the backend) names the only library tried, and the message says
// how to name another; the program's comes first.
TEST(NvrtcMissingTest, TheSettingNamesTheOnlyLibraryTried) {
  ScopedEnv library("KCACHE_NVRTC_LIBRARY", "/nonexistent/libnvrtc.so.98");
  CompilerConfig config;
  config.backend = "nvrtc";
  config.facts_dir = "-";
  auto made = make_compiler(config);
  ASSERT_FALSE(made.is_ok());
  EXPECT_EQ(made.status().code(), StatusCode::kUnavailable);
  const std::string message = made.status().message();
  EXPECT_NE(message.find("/nonexistent/libnvrtc.so.98"), std::string::npos) << message;
  EXPECT_NE(message.find("set KCACHE_NVRTC_LIBRARY or CUDA_HOME"), std::string::npos) << message;
  config.nvrtc_library = "/nonexistent/libnvrtc.so.99";
  made = make_compiler(config);
  ASSERT_FALSE(made.is_ok());
  EXPECT_NE(made.status().message().find("/nonexistent/libnvrtc.so.99"), std::string::npos)
      << made.status().message();
  EXPECT_EQ(made.status().message().find("so.98"), std::string::npos) << made.status().message();
}

}  // namespace
}  // namespace kcache
