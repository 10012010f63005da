#include "inputs/include_scanner.h"

#include <gtest/gtest.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <filesystem>

#include "fakes/temp_folder.h"

namespace kcache {
namespace {

using testing::TempFolder;
using testing::write_file;

Result<IncludeScan> scan(const std::string& source, Dialect dialect,
                         std::vector<PathOption> paths = {}, std::vector<Header> memory = {},
                         ScanSettings settings = {}) {
  SearchInputs inputs;
  inputs.dialect = dialect;
  inputs.paths = std::move(paths);
  const IncludeModel model(std::move(inputs));
  return scan_includes(source, memory, model, Env::posix(), settings);
}

std::vector<std::string> locations(const IncludeScan& found) {
  std::vector<std::string> out;
  for (const auto& header : found.headers) out.push_back(header.location);
  return out;
}

PathOption dir(const std::string& path) { return {OptionRole::kIncludeDir, path}; }

// The first folder that holds the name is what the compiler reads: only it
// is keyed, with where it was found.
TEST(IncludeScannerTest, FirstMatchInSearchOrderIsKeyed) {
  TempFolder d;
  write_file(d / "a/x.h", "a");
  write_file(d / "b/x.h", "b");
  auto found = scan("#include <x.h>\n", Dialect::kGcc, {dir(d / "a"), dir(d / "b")});
  ASSERT_TRUE(found.is_ok());
  EXPECT_EQ(locations(*found), (std::vector<std::string>{d / "a/x.h"}));
  // An unknown compiler may search in another order: every candidate.
  auto generic = scan("#include <x.h>\n", Dialect::kGeneric, {dir(d / "a"), dir(d / "b")});
  ASSERT_TRUE(generic.is_ok());
  EXPECT_EQ(locations(*generic), (std::vector<std::string>{d / "a/x.h", d / "b/x.h"}));
}

// A header met from many includers is looked at once: one probe for each
// path the search tried (found or not), one file keyed, however many
// files include it (a library's common header is met from hundreds).
TEST(IncludeScannerTest, EachPathIsProbedOnce) {
  TempFolder d;
  std::filesystem::create_directories(d / "a");
  write_file(d / "b/common.h", "#define C 1\n");
  std::string source;
  for (int i = 0; i < 5; ++i) {
    const std::string name = "user" + std::to_string(i) + ".h";
    write_file(d / ("b/" + name), "#include <common.h>\n");
    source += "#include <" + name + ">\n";
  }
  auto found = scan(source, Dialect::kGcc, {dir(d / "a"), dir(d / "b")});
  ASSERT_TRUE(found.is_ok());
  std::vector<std::string> probed;
  for (const auto& probe : found->probes) probed.push_back(probe.path);
  std::vector<std::string> unique = probed;
  std::sort(unique.begin(), unique.end());
  unique.erase(std::unique(unique.begin(), unique.end()), unique.end());
  EXPECT_EQ(probed.size(), unique.size()) << "a path probed twice";
  EXPECT_EQ(probed.size(), 12u);  // six names, each absent from a/ and found in b/
  EXPECT_EQ(found->files.size(), 6u);
  EXPECT_EQ(std::count(probed.begin(), probed.end(), d / "b/common.h"), 1);
}

// NVRTC and hipRTC match in-memory headers by name before any folder;
// OpenCL gets them as a folder after the options' -I.
TEST(IncludeScannerTest, WhereInMemoryHeadersSit) {
  TempFolder d;
  write_file(d / "a/x.h", "disk");
  const std::vector<Header> memory = {{"x.h", "memory"}};
  auto nvrtc = scan("#include <x.h>\n", Dialect::kNvrtc, {dir(d / "a")}, memory);
  ASSERT_TRUE(nvrtc.is_ok());
  EXPECT_EQ(locations(*nvrtc), (std::vector<std::string>{"memory:x.h"}));
  auto opencl = scan("#include <x.h>\n", Dialect::kOpenCl, {dir(d / "a")}, memory);
  ASSERT_TRUE(opencl.is_ok());
  EXPECT_EQ(locations(*opencl), (std::vector<std::string>{d / "a/x.h"}));
  // The command backend writes them beside the source: quoted only.
  auto quoted = scan("#include \"x.h\"\n", Dialect::kGcc, {dir(d / "a")}, memory);
  auto angled = scan("#include <x.h>\n", Dialect::kGcc, {dir(d / "a")}, memory);
  ASSERT_TRUE(quoted.is_ok() && angled.is_ok());
  EXPECT_EQ(locations(*quoted), (std::vector<std::string>{"memory:x.h"}));
  EXPECT_EQ(locations(*angled), (std::vector<std::string>{d / "a/x.h"}));
}

// The working folder: NVRTC's source folder (quoted includes), PoCL's
// first include folder (every include).
TEST(IncludeScannerTest, TheWorkingFolder) {
  TempFolder d;
  write_file(d / "w/x.h", "cwd");
  write_file(d / "a/x.h", "a");
  const auto original = std::filesystem::current_path();
  std::filesystem::current_path(d / "w");
  auto nvrtc_quoted = scan("#include \"x.h\"\n", Dialect::kNvrtc, {dir(d / "a")});
  auto nvrtc_angled = scan("#include <x.h>\n", Dialect::kNvrtc, {dir(d / "a")});
  auto opencl_angled = scan("#include <x.h>\n", Dialect::kOpenCl, {dir(d / "a")});
  std::filesystem::current_path(original);
  ASSERT_TRUE(nvrtc_quoted.is_ok() && nvrtc_angled.is_ok() && opencl_angled.is_ok());
  EXPECT_EQ(locations(*nvrtc_quoted), (std::vector<std::string>{"./x.h"}));
  EXPECT_EQ(locations(*nvrtc_angled), (std::vector<std::string>{d / "a/x.h"}));
  EXPECT_EQ(locations(*opencl_angled), (std::vector<std::string>{"./x.h"}));
}

TEST(IncludeScannerTest, IncludeNextAndHasIncludeAreKeyed) {
  TempFolder d;
  write_file(d / "a/x.h", "#include_next <x.h>\n");
  write_file(d / "b/x.h", "b");
  write_file(d / "b/opt.h", "opt");
  auto found = scan("#include <x.h>\n#if __has_include(<opt.h>)\n#endif\n", Dialect::kGcc,
                    {dir(d / "a"), dir(d / "b")});
  ASSERT_TRUE(found.is_ok());
  EXPECT_EQ(locations(*found), (std::vector<std::string>{d / "b/opt.h", d / "a/x.h", d / "b/x.h"}));
}

TEST(IncludeScannerTest, ForcedIncludesAreScanned) {
  TempFolder d;
  write_file(d / "f.h", "#include \"g.h\"\n");
  write_file(d / "g.h", "g");
  auto found = scan("int x;\n", Dialect::kGcc, {{OptionRole::kForcedInclude, d / "f.h"}});
  ASSERT_TRUE(found.is_ok());
  EXPECT_EQ(locations(*found), (std::vector<std::string>{d / "f.h", d / "g.h"}));
}

TEST(IncludeScannerTest, WhatCannotBeKeyedIsSaid) {
  TempFolder d;
  ASSERT_EQ(::mkfifo((d / "fifo.h").c_str(), 0600), 0);
  auto fifo = scan("#include \"" + (d / "fifo.h") + "\"\n", Dialect::kGcc);
  ASSERT_TRUE(fifo.is_ok());
  EXPECT_NE(fifo->unkeyable.find("not a regular file"), std::string::npos) << fifo->unkeyable;
  // Too many bytes for the limits: unkeyable, not an error.
  write_file(d / "big.h", std::string(4096, 'x'));
  ScanSettings small;
  small.max_bytes = 1024;
  auto big = scan("#include \"big.h\"\n", Dialect::kGcc, {dir(d.path())}, {}, small);
  ASSERT_TRUE(big.is_ok());
  EXPECT_FALSE(big->unkeyable.empty());
}

// A header that is there but cannot be read (EACCES, EIO): its content is
// unknown, so no key can be trusted. (An Env fails the read: root reads
// every file whatever its mode.)
TEST(IncludeScannerTest, AnUnreadableHeaderIsAnIoError) {
  class UnreadableEnv final : public EnvWrapper {
   public:
    UnreadableEnv() : EnvWrapper(Env::posix()) {}
    Result<ByteBuffer> read_file(const std::string& path) const override {
      return errno_status("cannot open", path, EACCES);
    }
  } env;
  TempFolder d;
  write_file(d / "secret.h", "x");
  SearchInputs inputs;
  inputs.dialect = Dialect::kGcc;
  inputs.paths = {dir(d.path())};
  const IncludeModel model(std::move(inputs));
  auto found = scan_includes("#include <secret.h>\n", {}, model, env, ScanSettings{});
  EXPECT_EQ(found.status().code(), StatusCode::kIoError);
  EXPECT_NE(found.status().message().find("secret.h"), std::string::npos);
}

// An include through a macro with several definitions keys each candidate;
// one kcache cannot expand keys everything reachable.
TEST(IncludeScannerTest, ComputedIncludes) {
  TempFolder d;
  write_file(d / "one.h", "1");
  write_file(d / "two.h", "2");
  auto both =
      scan("#ifdef A\n#define H \"one.h\"\n#else\n#define H \"two.h\"\n#endif\n#include H\n",
           Dialect::kGcc, {dir(d.path())});
  ASSERT_TRUE(both.is_ok());
  EXPECT_FALSE(both->searched_everywhere);
  EXPECT_EQ(locations(*both), (std::vector<std::string>{d / "one.h", d / "two.h"}));
  ScanSettings from_options;
  from_options.defines = {"H=<two.h>"};
  auto option = scan("#include H\n", Dialect::kGcc, {dir(d.path())}, {}, from_options);
  ASSERT_TRUE(option.is_ok());
  EXPECT_EQ(locations(*option), (std::vector<std::string>{d / "two.h"}));
  // Unsettled: where the compiler lists what it read (depend mode),
  // everything reachable is keyed; elsewhere the request is unkeyable (the
  // macro may name any file, an absolute one too).
  ScanSettings depend_mode;
  depend_mode.everywhere_is_enough = true;
  auto unknown = scan("#include H\n", Dialect::kGcc, {dir(d.path())}, {{"m.h", "m"}}, depend_mode);
  ASSERT_TRUE(unknown.is_ok());
  EXPECT_TRUE(unknown->searched_everywhere);
  EXPECT_EQ(unknown->headers.size(), 3u);  // one.h, two.h and the in-memory m.h
  auto unkeyable = scan("#include H\n", Dialect::kNvrtc, {dir(d.path())});
  ASSERT_TRUE(unkeyable.is_ok());
  EXPECT_FALSE(unkeyable->unkeyable.empty());
}

// A __has_include through a macro (CCCL's _CCCL_HAS_INCLUDE), through a
// chain of them, with a header name or a macro naming one: each call tests
// for what it passes, keyed (or probed) as a plain __has_include is.
TEST(IncludeScannerTest, HasIncludeThroughAMacroIsFollowedToItsCalls) {
  TempFolder d;
  write_file(d / "inc/wrap.h",
             "#define _CCCL_HAS_INCLUDE(_X) __has_include(_X)\n"
             "#define CHAIN(h) _CCCL_HAS_INCLUDE(h)\n#define ALIAS CHAIN\n"
             "#define NEXT(...) __has_include_next(__VA_ARGS__)\n");
  write_file(d / "inc/fp16.h", "");
  write_file(d / "inc/bf16.h", "");
  write_file(d / "inc/named.h", "");
  write_file(d / "inc/later.h", "#if _CCCL_HAS_INCLUDE(\"late.h\")\n#endif\n");
  write_file(d / "inc/late.h", "");
  const std::string source =
      "#include <later.h>\n#include <wrap.h>\n#define HDR <named.h>\n"
      "#if _CCCL_HAS_INCLUDE(<fp16.h>) && ALIAS(<bf16.h>) && CHAIN(HDR)\n#endif\n"
      "#if _CCCL_HAS_INCLUDE(<absent.h>)\n#endif\n";
  auto found = scan(source, Dialect::kNvrtc, {dir(d / "inc")});
  ASSERT_TRUE(found.is_ok());
  EXPECT_EQ(found->unkeyable, "");
  EXPECT_FALSE(found->searched_everywhere);
  EXPECT_EQ(locations(*found),
            (std::vector<std::string>{d / "inc/bf16.h", d / "inc/fp16.h", d / "inc/late.h",
                                      d / "inc/later.h", d / "inc/named.h", d / "inc/wrap.h"}));
  // The header that is not there is looked for: when it appears, the
  // scan's probes tell.
  EXPECT_TRUE(std::any_of(found->probes.begin(), found->probes.end(), [&](const ScanProbe& p) {
    return p.path == d / "inc/absent.h" && !p.stamp;
  }));
}

// A -D option may define the wrapper, or test for a header itself, for a
// source with no #include at all.
TEST(IncludeScannerTest, HasIncludeThroughAnOptionMacro) {
  TempFolder d;
  write_file(d / "one.h", "");
  write_file(d / "two.h", "");
  ScanSettings settings;
  settings.defines = {"WRAP(x)=__has_include(x)", "HAS_TWO=__has_include(<two.h>)"};
  auto found = scan("#if WRAP(<one.h>) && HAS_TWO\n#endif\n", Dialect::kNvrtc, {dir(d.path())}, {},
                    settings);
  ASSERT_TRUE(found.is_ok());
  EXPECT_EQ(found->unkeyable, "");
  EXPECT_EQ(locations(*found), (std::vector<std::string>{d / "one.h", d / "two.h"}));
}

// A parameter pasted into a header name (`<x.h>`) may name any header:
// unkeyable for NVRTC (which lists nothing it read), named in the message;
// never called, such a macro costs nothing.
TEST(IncludeScannerTest, AHasIncludeMacroKcacheCannotFollowIsSaid) {
  TempFolder d;
  const std::string define = "#define PASTE(x) __has_include(<x.h>)\n";
  auto unused = scan(define, Dialect::kNvrtc, {dir(d.path())});
  ASSERT_TRUE(unused.is_ok());
  EXPECT_EQ(unused->unkeyable, "");
  auto called = scan(define + "#if PASTE(one)\n#endif\n", Dialect::kNvrtc, {dir(d.path())});
  ASSERT_TRUE(called.is_ok());
  EXPECT_NE(called->unkeyable.find("macro PASTE"), std::string::npos) << called->unkeyable;
}

}  // namespace
}  // namespace kcache
