#include <gtest/gtest.h>

#include "compiler/registry.h"
#include "fakes/temp_folder.h"

namespace kcache {
namespace {

using testing::TempFolder;

CompilerConfig command(std::string line, std::string id = "test-cc") {
  CompilerConfig config;
  config.backend = "command";
  config.command = std::move(line);
  config.compiler_id = std::move(id);
  return config;
}

TEST(CommandCompilerTest, CompilesThroughTheCommandLine) {
  auto compiler = make_compiler(command("sh -c 'tr a-z A-Z < \"$0\" > \"$1\"' {in} {out}"));
  ASSERT_TRUE(compiler.is_ok()) << compiler.status().to_string();
  KernelRequest request;
  request.source = "hello";
  auto target = (*compiler)->resolve_target({});
  ASSERT_TRUE(target.is_ok());
  EXPECT_EQ(target->arch, "generic");
  auto out = (*compiler)->compile(request, *target);
  ASSERT_TRUE(out.is_ok()) << out.status().to_string() << out.status().details();
  EXPECT_EQ(std::string(out->binary.begin(), out->binary.end()), "HELLO");
}

TEST(CommandCompilerTest, OptionsHeadersAndTargetReachTheCommand) {
  // The "compiler" writes its arguments and the included header to {out}.
  auto compiler = make_compiler(
      command("sh -c 'echo \"$@\" > \"$1\"; cat \"$(dirname \"$0\")/inc.h\" >> \"$1\"' {in} {out} "
              "--arch={target} {options}"));
  ASSERT_TRUE(compiler.is_ok());
  KernelRequest request;
  request.source = "x";
  request.options = "-DA=1 '-DB=two words'";
  request.headers = {{"inc.h", "HEADER"}};
  auto out = (*compiler)->compile(request, Target{"gfx906", "", 0});
  ASSERT_TRUE(out.is_ok()) << out.status().details();
  std::string text(out->binary.begin(), out->binary.end());
  EXPECT_NE(text.find("--arch=gfx906 -DA=1 -DB=two words"), std::string::npos) << text;
  EXPECT_NE(text.find("HEADER"), std::string::npos) << text;
}

TEST(CommandCompilerTest, FailureReturnsTheLog) {
  auto compiler =
      make_compiler(command("sh -c 'echo \"bad source at line 3\" >&2; exit 4' {in} {out}"));
  ASSERT_TRUE(compiler.is_ok());
  KernelRequest request;
  request.source = "x";
  auto out = (*compiler)->compile(request, Target{"g", "", 0});
  ASSERT_FALSE(out.is_ok());
  EXPECT_EQ(out.status().code(), StatusCode::kCompileError);
  EXPECT_NE(out.status().message().find("exit code 4"), std::string::npos);
  EXPECT_NE(out.status().details().find("bad source at line 3"), std::string::npos);
}

TEST(CommandCompilerTest, NoOutputFileIsACompileError) {
  auto compiler = make_compiler(command("true {in} {out}"));
  KernelRequest request;
  request.source = "x";
  EXPECT_EQ((*compiler)->compile(request, Target{"g", "", 0}).status().code(),
            StatusCode::kCompileError);
}

TEST(CommandCompilerTest, BadConfigurations) {
  EXPECT_EQ(make_compiler(command("cc -c {in}")).status().code(), StatusCode::kInvalidArgument);
  EXPECT_EQ(make_compiler(command("")).status().code(), StatusCode::kInvalidArgument);
  EXPECT_EQ(make_compiler(command("cc '{in} {out}")).status().code(), StatusCode::kInvalidArgument);
  CompilerConfig unknown;
  unknown.backend = "fortran";
  auto bad = make_compiler(unknown);
  EXPECT_EQ(bad.status().code(), StatusCode::kInvalidArgument);
  EXPECT_NE(bad.status().message().find("command"), std::string::npos);  // lists the known ones
}

TEST(CommandCompilerTest, MissingProgramIsUnavailable) {
  auto compiler = make_compiler(command("kcache-no-such-compiler {in} {out}", ""));
  ASSERT_FALSE(compiler.is_ok());
  EXPECT_EQ(compiler.status().code(), StatusCode::kUnavailable);
  EXPECT_NE(compiler.status().message().find("kcache-no-such-compiler"), std::string::npos);
}

TEST(CommandCompilerTest, IdentityFollowsTheVersionOutput) {
  TempFolder dir;
  const std::string script = dir / "cc.sh";
  testing::write_file(script, "#!/bin/sh\necho 'cc 1.0'\n");
  std::filesystem::permissions(script, std::filesystem::perms::owner_all);
  auto v1 = make_compiler(command(script + " {in} {out}", ""));
  ASSERT_TRUE(v1.is_ok()) << v1.status().to_string();
  testing::write_file(script, "#!/bin/sh\necho 'cc 2.0'\n");
  auto v2 = make_compiler(command(script + " {in} {out}", ""));
  ASSERT_TRUE(v2.is_ok());
  EXPECT_NE((*v1)->identity().version, (*v2)->identity().version);
  auto fixed = make_compiler(command(script + " {in} {out}", "my-cc-7"));
  EXPECT_EQ((*fixed)->identity().version, "id:my-cc-7");
}

}  // namespace
}  // namespace kcache
