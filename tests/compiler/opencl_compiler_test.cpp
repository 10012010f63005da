// Runs against the real OpenCL platform (PoCL in CI); skips when none,
// fails instead when KCACHE_REQUIRE_BACKENDS names opencl (as in CI).
#include <gtest/gtest.h>

#include "build_config.h"
#include "compiler/registry.h"
#include "fakes/required_backends.h"

namespace kcache {
namespace {

class OpenClCompilerTest : public ::testing::Test {
 protected:
  void SetUp() override {
#if !KCACHE_WITH_OPENCL
    KCACHE_SKIP_OR_FAIL_BACKEND("opencl", "built without the OpenCL backend");
#endif
    CompilerConfig config;
    config.backend = "opencl";
    auto made = make_compiler(config);
    if (!made)
      KCACHE_SKIP_OR_FAIL_BACKEND("opencl", "no OpenCL platform: " << made.status().message());
    compiler = std::move(*made);
  }
  std::unique_ptr<Compiler> compiler;
};

constexpr const char* kSource = R"(
#include "scale.h"
kernel void scale(global float* x) { x[get_global_id(0)] *= SCALE; }
)";

TEST_F(OpenClCompilerTest, IdentityAndTargetComeFromTheDevice) {
  const CompilerIdentity& id = compiler->identity();
  EXPECT_EQ(id.backend, "opencl");
  EXPECT_FALSE(id.id.empty());
  EXPECT_NE(id.version.find("driver"), std::string::npos);
  auto target = compiler->resolve_target({});
  ASSERT_TRUE(target.is_ok());
  EXPECT_FALSE(target->arch.empty());
  EXPECT_GT(target->units, 0);
  EXPECT_TRUE(compiler->resolve_target(*target).is_ok());
  // Its name as a manifest or `--target` writes it, read back: also for a
  // device whose name has no digit, where "<arch>_<units>" parses as an
  // arch alone.
  auto written = Target::parse(target->to_string());
  ASSERT_TRUE(written.is_ok());
  auto resolved = compiler->resolve_target(*written);
  ASSERT_TRUE(resolved.is_ok()) << resolved.status().to_string();
  EXPECT_EQ(resolved->db_basename(), target->db_basename());
  auto digitless = Target::parse("pthread-haswell-amd-epyc_2");
  ASSERT_TRUE(digitless.is_ok());
  EXPECT_EQ(digitless->arch, "pthread-haswell-amd-epyc_2");  // why the fallback exists
  EXPECT_EQ(compiler->resolve_target(Target{"sm_90", "", 0}).status().code(),
            StatusCode::kInvalidArgument);
}

TEST_F(OpenClCompilerTest, CompilesWithInMemoryHeadersAndRunsWarmup) {
  KernelRequest request;
  request.source = kSource;
  request.kernel_names = {"scale"};
  request.headers = {{"scale.h", "#define SCALE 2.0f\n"}};
  bool warmed = false;
  request.warmup = [&](const BuiltProgram& program) {
    warmed = program.program != nullptr && program.context != nullptr;
    return Status::ok();
  };
  auto out = compiler->compile(request, *compiler->resolve_target({}));
  ASSERT_TRUE(out.is_ok()) << out.status().message() << "\n" << out.status().details();
  EXPECT_TRUE(warmed);
  EXPECT_GT(out->binary.size(), 100u);
}

// The binary a compile stores says whether it ran the request's warmup;
// one stored without (by `kcache compile`, say) does not serve a request
// with a warmup, so the cache builds it again warmed. Any other binary does.
TEST_F(OpenClCompilerTest, AnUnwarmedBinaryDoesNotServeAWarmupRequest) {
  KernelRequest request;
  request.source = "kernel void k(global float* x) { x[0] = 1; }";
  auto unwarmed = compiler->compile(request, *compiler->resolve_target({}));
  ASSERT_TRUE(unwarmed.is_ok()) << unwarmed.status().message();
  KernelRequest warm = request;
  warm.warmup = [](const BuiltProgram&) { return Status::ok(); };
  auto warmed = compiler->compile(warm, *compiler->resolve_target({}));
  ASSERT_TRUE(warmed.is_ok()) << warmed.status().message();

  EXPECT_FALSE(compiler->stored_binary_serves(warm, unwarmed->metadata));
  EXPECT_TRUE(compiler->stored_binary_serves(warm, warmed->metadata));
  EXPECT_TRUE(compiler->stored_binary_serves(request, unwarmed->metadata));
  EXPECT_TRUE(compiler->stored_binary_serves(request, warmed->metadata));
  EXPECT_TRUE(compiler->stored_binary_serves(warm, {})) << "an entry older than the field";
}

TEST_F(OpenClCompilerTest, BuildErrorCarriesTheLog) {
  KernelRequest request;
  request.source = "kernel void broken(global float* x) { x[0] = undefined_name; }";
  auto out = compiler->compile(request, *compiler->resolve_target({}));
  ASSERT_FALSE(out.is_ok());
  EXPECT_EQ(out.status().code(), StatusCode::kCompileError);
  EXPECT_NE(out.status().details().find("undefined_name"), std::string::npos)
      << out.status().details();
}

TEST_F(OpenClCompilerTest, MissingKernelNameIsACompileError) {
  KernelRequest request;
  request.source = "kernel void present(global float* x) { x[0] = 1; }";
  request.kernel_names = {"absent"};
  auto out = compiler->compile(request, *compiler->resolve_target({}));
  EXPECT_EQ(out.status().code(), StatusCode::kCompileError);
  EXPECT_NE(out.status().message().find("absent"), std::string::npos);
}

TEST_F(OpenClCompilerTest, FailingWarmupFailsTheCompile) {
  KernelRequest request;
  request.source = "kernel void k(global float* x) { x[0] = 1; }";
  request.warmup = [](const BuiltProgram&) { return Status::io_error("device lost"); };
  auto out = compiler->compile(request, *compiler->resolve_target({}));
  ASSERT_FALSE(out.is_ok());
  EXPECT_NE(out.status().message().find("device lost"), std::string::npos);
}

}  // namespace
}  // namespace kcache
