// The C API over NVRTC, which compiles without a GPU: name expressions and
// their lowered names, in-memory headers, the program name, the NVRTC
// settings. Skips where libnvrtc is missing, fails there when
// KCACHE_REQUIRE_BACKENDS names nvrtc.
#include <kcache/c_api.h>

#include <gtest/gtest.h>

#include <algorithm>
#include <cstdlib>
#include <filesystem>
#include <string>
#include <string_view>

#include "c_api/c_api_fixture.h"
#include "c_api/c_api_internal.h"
#include "fakes/required_backends.h"
#include "fakes/temp_folder.h"

namespace {

using kcache::testing::CachePtr;
using kcache::testing::CompilerPtr;
using kcache::testing::fetch;
using kcache::testing::KernelPtr;
using kcache::testing::open_in;
using kcache::testing::take_error;
using kcache::testing::TempFolder;

constexpr const char* kScaleHeader = R"(
template <int TS>
__global__ void scale(float* x, float a) { x[blockIdx.x * TS + threadIdx.x] *= a; }
)";

TEST(CApiNvrtcTest, NameExpressionsAreLoweredAndListed) {
  TempFolder dir;
  const std::string facts = dir / "facts";
  kcache_compiler_config config{};
  config.size = sizeof config;
  config.backend = "nvrtc";
  config.facts_dir = facts.c_str();
  kcache_compiler* made = nullptr;
  char* error = nullptr;
  if (kcache_compiler_new(&config, &made, &error) != KCACHE_OK) {
    KCACHE_SKIP_OR_FAIL_BACKEND("nvrtc", take_error(error));
  }
  CompilerPtr compiler(made);
  EXPECT_STREQ(kcache_compiler_backend(compiler.get()), "nvrtc");
  EXPECT_EQ(std::string(kcache_compiler_version(compiler.get())).rfind("nvrtc ", 0), 0u)
      << kcache_compiler_version(compiler.get());
  EXPECT_FALSE(kcache::testing::names_in(facts).empty());  // facts_dir is where they went

  const char* const names[] = {"scale<16>", "scale<32>"};
  const char* const header_names[] = {"scale.h"};
  const char* const header_contents[] = {kScaleHeader};
  kcache_kernel_request request{};
  request.size = sizeof request;
  request.source = "#include \"scale.h\"\n";
  request.kernel_names = names;
  request.kernel_name_count = 2;
  request.header_names = header_names;
  request.header_contents = header_contents;
  request.header_count = 1;
  request.source_name = "scales.cu";
  request.target = "sm_90_132";
  {
    CachePtr cache = open_in(dir);
    KernelPtr kernel = fetch(cache.get(), compiler.get(), request);
    ASSERT_NE(kernel, nullptr);
    EXPECT_STREQ(kcache_kernel_tier(kernel.get()), "compiled");
    EXPECT_STREQ(kcache_kernel_lowered_name(kernel.get(), "scale<16>"), "_Z5scaleILi16EEvPff");
    EXPECT_STREQ(kcache_kernel_lowered_name(kernel.get(), "scale<32>"), "_Z5scaleILi32EEvPff");
    EXPECT_STREQ(kcache_kernel_metadata(kernel.get(), "format"), "cubin");
    EXPECT_STREQ(kcache_kernel_target(kernel.get()), "sm_90_132");
    EXPECT_STREQ(kcache_kernel_db(kernel.get()), "sm_90_132");
    int lowered = 0;
    for (std::size_t i = 0; i < kcache_kernel_metadata_count(kernel.get()); ++i) {
      lowered += std::string(kcache_kernel_metadata_name(kernel.get(), i)) == "lowered";
    }
    EXPECT_EQ(lowered, 2);
  }
  CachePtr again = open_in(dir);  // another program, say
  KernelPtr kernel = fetch(again.get(), compiler.get(), request);
  ASSERT_NE(kernel, nullptr);
  EXPECT_STREQ(kcache_kernel_tier(kernel.get()), "user");
  EXPECT_STREQ(kcache_kernel_lowered_name(kernel.get(), "scale<32>"), "_Z5scaleILi32EEvPff");
  const char* unknown = "scale<64>";
  EXPECT_EQ(kcache_kernel_lowered_name(kernel.get(), unknown), unknown);

  // A compile error carries NVRTC's log, which names the program.
  request.source = "#include \"scale.h\"\n__global__ void k() { undeclared(); }\n";
  kcache_kernel* failed = nullptr;
  EXPECT_EQ(kcache_kernel_get_or_compile(again.get(), compiler.get(), &request, &failed, &error),
            KCACHE_COMPILE_ERROR);
  EXPECT_NE(take_error(error).find("scales.cu"), std::string::npos);
  EXPECT_EQ(failed, nullptr);
}

// nvrtc_toolkit_include and nvrtc_library reach the backend.
TEST(CApiNvrtcTest, ToolkitFoldersAndLibraryAreTheConfigs) {
  kcache_compiler_config config{};
  config.size = sizeof config;
  config.backend = "nvrtc";
  config.facts_dir = "-";
  config.nvrtc_toolkit_include = KCACHE_NO;
  kcache_compiler* made = nullptr;
  char* error = nullptr;
  if (kcache_compiler_new(&config, &made, &error) != KCACHE_OK) {
    KCACHE_SKIP_OR_FAIL_BACKEND("nvrtc", take_error(error));
  }
  CompilerPtr without(made);
  EXPECT_TRUE(without.get()->compiler->inputs().toolkit_dirs.empty());

  // CI has NVRTC 12 in a folder of its own (KCACHE_TEST_NVRTC_PATH, a
  // ':'-separated list).
  const char* folders = std::getenv("KCACHE_TEST_NVRTC_PATH");
  std::string library;
  for (std::string_view rest = folders != nullptr ? folders : ""; !rest.empty();) {
    const std::string_view folder = rest.substr(0, rest.find(':'));
    rest.remove_prefix(std::min(rest.size(), folder.size() + 1));
    if (std::filesystem::exists(std::string(folder) + "/libnvrtc.so.12")) {
      library = std::string(folder) + "/libnvrtc.so.12";
      break;
    }
  }
  if (library.empty()) return;
  config.nvrtc_library = library.c_str();
  config.nvrtc_toolkit_include = KCACHE_DEFAULT;
  ASSERT_EQ(kcache_compiler_new(&config, &made, &error), KCACHE_OK) << take_error(error);
  CompilerPtr twelve(made);
  EXPECT_EQ(std::string(kcache_compiler_version(twelve.get())).rfind("nvrtc 12.", 0), 0u)
      << kcache_compiler_version(twelve.get());
}

}  // namespace
