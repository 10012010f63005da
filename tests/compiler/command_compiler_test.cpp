#include <gtest/gtest.h>
#include <signal.h>

#include <kcache/cache.h>

#include <cerrno>
#include <chrono>
#include <fstream>
#include <sstream>
#include <thread>

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

// Whether `pid` is still a live process: not gone and not a zombie (a
// killed grandchild stays one until whoever adopted it reaps it).
bool alive(pid_t pid) {
  if (::kill(pid, 0) != 0 && errno == ESRCH) return false;
  std::ifstream stat("/proc/" + std::to_string(pid) + "/stat");
  std::string text((std::istreambuf_iterator<char>(stat)), std::istreambuf_iterator<char>());
  const auto paren = text.rfind(')');
  if (paren == std::string::npos || paren + 2 >= text.size()) return false;  // gone meanwhile
  const char state = text[paren + 2];
  return state != 'Z' && state != 'X';
}

// Whether `pid` stops being alive within `limit` (SIGKILL is delivered
// asynchronously to the other members of a group).
bool dies_within(pid_t pid, std::chrono::milliseconds limit) {
  const auto deadline = std::chrono::steady_clock::now() + limit;
  while (alive(pid)) {
    if (std::chrono::steady_clock::now() >= deadline) return false;
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
  }
  return true;
}

std::vector<pid_t> read_pids(const std::string& path) {
  std::ifstream in(path);
  std::vector<pid_t> pids;
  for (pid_t pid = 0; in >> pid;) pids.push_back(pid);
  return pids;
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

// The identity is the build, as ccache's compiler_check=mtime sees it: a
// compiler edited or replaced is a new identity even when it prints the
// same --version, and so is a script the command line runs through sh.
TEST(CommandCompilerTest, IdentityIsTheCompilersFiles) {
  TempFolder dir;
  const std::string script = dir / "cc.sh";
  testing::write_file(script, "#!/bin/sh\necho 'cc 1.0'\n");
  std::filesystem::permissions(script, std::filesystem::perms::owner_all);
  auto v1 = make_compiler(command(script + " {in} {out}", ""));
  ASSERT_TRUE(v1.is_ok()) << v1.status().to_string();
  EXPECT_NE((*v1)->identity().version.find(script), std::string::npos) << (*v1)->identity().version;
  testing::write_file(script, "#!/bin/sh\necho 'cc 1.0' # a rebuilt compiler\n");
  auto v2 = make_compiler(command(script + " {in} {out}", ""));
  ASSERT_TRUE(v2.is_ok());
  EXPECT_NE((*v1)->identity().version, (*v2)->identity().version);

  const std::string body = dir / "body.sh";
  testing::write_file(body, "cat \"$1\" > \"$2\"\n");
  auto s1 = make_compiler(command("sh " + body + " {in} {out}", ""));
  testing::write_file(body, "cat \"$1\" > \"$2\"; echo changed >> \"$2\"\n");
  auto s2 = make_compiler(command("sh " + body + " {in} {out}", ""));
  ASSERT_TRUE(s1.is_ok() && s2.is_ok());
  EXPECT_NE((*s1)->identity().version, (*s2)->identity().version);

  auto fixed = make_compiler(command(script + " {in} {out}", "my-cc-7"));
  EXPECT_EQ((*fixed)->identity().version, "id:my-cc-7");
}

// `env NAME=value` on the command line is the compiler's environment:
// CPATH there is modelled as if kcache had it (found by the review of
// issue 10); env -u and -i take variables away.
TEST(CommandCompilerTest, EnvWordsOnTheCommandLineAreTheCompilersEnvironment) {
  auto with = make_compiler(command("env CPATH=/a:/b gcc -E -P -x c {in} -o {out}", ""));
  ASSERT_TRUE(with.is_ok()) << with.status().to_string();
  const CompilerInputs& inputs = (*with)->inputs();
  EXPECT_EQ(inputs.dialect, "gcc");
  EXPECT_NE(std::find(inputs.environment.begin(), inputs.environment.end(),
                      std::pair<std::string, std::string>{"CPATH", "/a:/b"}),
            inputs.environment.end());
  EXPECT_NE(std::find(inputs.trailing_options.begin(), inputs.trailing_options.end(), "-I/a"),
            inputs.trailing_options.end());
  ::setenv("CPATH", "/from-kcache", 1);
  auto unset = make_compiler(command("env -u CPATH gcc -E -P -x c {in} -o {out}", ""));
  ::unsetenv("CPATH");
  ASSERT_TRUE(unset.is_ok()) << unset.status().to_string();
  for (const auto& [name, value] : (*unset)->inputs().environment) EXPECT_NE(name, "CPATH");
}

// Making a command compiler runs nothing (no --version probe): a compiler
// that would hang when asked for its version costs nothing until used.
TEST(CommandCompilerTest, MakingTheCompilerRunsNothing) {
  TempFolder dir;
  const std::string script = dir / "cc.sh";
  const std::string marker = dir / "ran";
  testing::write_file(script, "#!/bin/sh\ntouch " + marker + "\nsleep 30\n");
  std::filesystem::permissions(script, std::filesystem::perms::owner_all);
  auto compiler = make_compiler(command(script + " {in} {out}", ""));
  ASSERT_TRUE(compiler.is_ok()) << compiler.status().to_string();
  EXPECT_FALSE(std::filesystem::exists(marker));
}

TEST(CommandCompilerTest, AHungCommandAndWhatItStartedAreStoppedAtTheTimeout) {
  TempFolder dir;
  const std::string pids = dir / "pids";
  // The shell writes its own pid and its background child's, then waits on
  // a foreground sleep: three processes, none of which ends on its own.
  auto config = command("sh -c 'echo $$ > " + pids + "; sleep 30 & echo $! >> " + pids +
                        "; sleep 30' {in} {out}");
  config.timeout = std::chrono::milliseconds(300);
  auto compiler = make_compiler(config);
  ASSERT_TRUE(compiler.is_ok()) << compiler.status().to_string();
  KernelRequest request;
  request.source = "x";

  const auto start = std::chrono::steady_clock::now();
  auto out = (*compiler)->compile(request, Target{"g", "", 0});
  const auto elapsed = std::chrono::steady_clock::now() - start;

  ASSERT_FALSE(out.is_ok());
  EXPECT_EQ(out.status().code(), StatusCode::kTimeout) << out.status().to_string();
  EXPECT_GE(elapsed, std::chrono::milliseconds(300));
  EXPECT_LT(elapsed, std::chrono::seconds(5));
  const std::string& message = out.status().message();
  EXPECT_NE(message.find("sh did not finish within 0.3 s"), std::string::npos) << message;
  EXPECT_NE(message.find("SIGKILL"), std::string::npos) << message;

  const auto written = read_pids(pids);
  ASSERT_EQ(written.size(), 2u) << testing::read_file(pids);
  EXPECT_TRUE(dies_within(written[0], std::chrono::seconds(5))) << "the shell " << written[0];
  EXPECT_TRUE(dies_within(written[1], std::chrono::seconds(5))) << "its child " << written[1];
  // The shell was reaped by run_process: it is not a zombie of this process.
  const int rc = ::kill(written[0], 0);
  const int error = errno;
  EXPECT_EQ(rc, -1);
  EXPECT_EQ(error, ESRCH);
}

TEST(CommandCompilerTest, AFastCommandFinishesWithinItsTimeout) {
  for (auto limit : {std::chrono::milliseconds(10'000), std::chrono::milliseconds(0)}) {
    auto config = command("sh -c 'tr a-z A-Z < \"$0\" > \"$1\"' {in} {out}");
    config.timeout = limit;  // 0: no limit
    auto compiler = make_compiler(config);
    ASSERT_TRUE(compiler.is_ok()) << compiler.status().to_string();
    KernelRequest request;
    request.source = "hello";
    auto out = (*compiler)->compile(request, Target{"g", "", 0});
    ASSERT_TRUE(out.is_ok()) << limit.count() << " ms: " << out.status().to_string();
    EXPECT_EQ(std::string(out->binary.begin(), out->binary.end()), "HELLO");
  }
}

TEST(CommandCompilerTest, ATimeoutIsNotRememberedAsACompileError) {
  TempFolder dir;
  // Hangs the first time, compiles the next.
  auto config =
      command("sh -c 'if [ -e " + (dir / "ran") + " ]; then cp \"$0\" \"$1\"; else touch " +
              (dir / "ran") + "; sleep 30; fi' {in} {out}");
  config.timeout = std::chrono::milliseconds(300);
  auto compiler = make_compiler(config);
  ASSERT_TRUE(compiler.is_ok()) << compiler.status().to_string();
  CacheOptions options;
  options.cache_dir = dir / "cache";
  options.system_db_path = dir / "system";
  options.log_level = LogLevel::kQuiet;
  options.read_environment = false;
  auto cache = Cache::open(options);
  ASSERT_TRUE(cache.is_ok()) << cache.status().to_string();
  KernelRequest request;
  request.source = "kernel";

  auto first = (*cache)->get_or_compile(request, **compiler);
  ASSERT_FALSE(first.is_ok());
  EXPECT_EQ(first.status().code(), StatusCode::kTimeout) << first.status().to_string();
  auto second = (*cache)->get_or_compile(request, **compiler);
  ASSERT_TRUE(second.is_ok()) << second.status().to_string();
  EXPECT_EQ(second->tier, TierKind::kCompiled);
}

}  // namespace
}  // namespace kcache
