// The identity is the build, not the version string (issue 10): each
// backend's identity names the files its compiler is made of, with their
// stamps, so an update that keeps the version string changes every key.
#include <gtest/gtest.h>

#include <kcache/compiler.h>

#include "fakes/required_backends.h"
#include "fakes/temp_folder.h"

namespace kcache {
namespace {

Result<std::unique_ptr<Compiler>> made(const std::string& backend, std::string facts_dir = "-") {
  CompilerConfig config;
  config.backend = backend;
  config.facts_dir = std::move(facts_dir);
  return make_compiler(config);
}

TEST(CompilerIdentityTest, OpenClHoldsItsBuild) {
  auto compiler = made("opencl");
  if (!compiler) KCACHE_SKIP_OR_FAIL_BACKEND("opencl", compiler.status().message());
  const std::string& version = (*compiler)->identity().version;
  EXPECT_NE(version.find(" | build sha256:"), std::string::npos) << version;
}

TEST(CompilerIdentityTest, NvrtcNamesItsLibraryAndItsBuild) {
  auto compiler = made("nvrtc");
  if (!compiler) KCACHE_SKIP_OR_FAIL_BACKEND("nvrtc", compiler.status().message());
  const std::string& version = (*compiler)->identity().version;
  EXPECT_NE(version.find("libnvrtc.so"), std::string::npos) << version;
  EXPECT_NE(version.find("); build sha256:"), std::string::npos) << version;
}

// A second compiler made from the record knows the same without loading
// libnvrtc, and compiles the same (the library is loaded then).
TEST(CompilerIdentityTest, NvrtcFromItsRecordIsTheSame) {
  testing::TempFolder dir;
  auto first = made("nvrtc", dir / "facts");
  if (!first) KCACHE_SKIP_OR_FAIL_BACKEND("nvrtc", first.status().message());
  auto second = made("nvrtc", dir / "facts");
  ASSERT_TRUE(second.is_ok()) << second.status().to_string();
  EXPECT_EQ((*first)->identity().version, (*second)->identity().version);
  EXPECT_EQ((*first)->inputs().toolkit_dirs, (*second)->inputs().toolkit_dirs);
  auto target = (*second)->resolve_target(*Target::parse("sm_80"));
  ASSERT_TRUE(target.is_ok()) << target.status().to_string();
  KernelRequest request;
  request.source = "extern \"C\" __global__ void k(int* x) { x[0] = 1; }";
  request.kernel_names = {"k"};
  auto a = (*first)->compile(request, *target);
  auto b = (*second)->compile(request, *target);
  ASSERT_TRUE(a.is_ok() && b.is_ok()) << b.status().to_string();
  EXPECT_EQ(a->binary, b->binary);
  // A damaged record is no record.
  for (const auto& entry : std::filesystem::directory_iterator(dir / "facts")) {
    testing::write_file(entry.path().string(), "kcache.compiler-facts 1\nlibrary /nowhere\n");
  }
  auto third = made("nvrtc", dir / "facts");
  ASSERT_TRUE(third.is_ok());
  EXPECT_EQ((*third)->identity().version, (*first)->identity().version);
}

}  // namespace
}  // namespace kcache
