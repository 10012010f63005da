// Stale keys under the gcc dialect: requests whose key stayed the same when
// a file gcc reads changed, written while adding fuzz_include_graph
// (docs/fuzzing.md), which checks keys against gcc itself. The cases
// marked "Found by fuzz_include_graph" are its failures, reduced; the
// others follow from the same rules of gcc's search, found while
// explaining those. What gcc reads in each was checked with gcc 12.2
// (`gcc -E -P -x c`, in-memory headers beside the source).
#include <gtest/gtest.h>

#include <filesystem>
#include <string>

#include "fakes/temp_folder.h"
#include "key/key_builder.h"

namespace kcache {
namespace {

using testing::TempFolder;
using testing::write_file;

const CompilerIdentity kGcc{"command", "gcc | gcc -E -P -x c {in} -o {out} | kernel.src",
                            "id:gcc-12.2"};
const Target kTarget{"generic", "", 0};

// The key text of `request` for a gcc command; empty when it cannot be keyed.
std::string key_of(const KernelRequest& request) {
  CompilerInputs inputs;
  inputs.dialect = "gcc";
  auto material = build_key_material(request, kGcc, inputs, kTarget, Env::posix());
  EXPECT_TRUE(material.is_ok()) << material.status().to_string();
  return material ? material->serialize() : std::string();
}

// gcc resumes an #include_next where the includer was found, and a header
// found in its includer's folder was found before the first -iquote
// folder: #include_next <m.h> there searches the -iquote folders too, as
// "m.h" would. Found by fuzz_include_graph (gcc read the m.h of an
// -iquote folder, which the key did not hold).
TEST(IncludeRegressionsTest, IncludeNextBesideItsIncluderSearchesTheQuoteFolders) {
  TempFolder d;
  write_file(d / "i/x.h", "#include \"y.h\"\n");
  write_file(d / "i/y.h", "#include_next <m.h>\n");
  write_file(d / "q/m.h", "int before;\n");
  KernelRequest request;
  request.source = "#include <x.h>\n";
  request.options = "-iquote " + (d / "q") + " -I " + (d / "i");
  const std::string before = key_of(request);
  write_file(d / "q/m.h", "int after;\n");  // gcc -E prints "int after;" now
  EXPECT_NE(key_of(request), before);
}

// The same from an in-memory header: the command backend writes it beside
// the source, and gcc finds it there, before the -iquote folders.
TEST(IncludeRegressionsTest, IncludeNextInAnInMemoryHeaderSearchesTheQuoteFolders) {
  TempFolder d;
  write_file(d / "q/m.h", "int before;\n");
  KernelRequest request;
  request.source = "#include \"mm.h\"\n";
  request.headers = {{"mm.h", "#include_next <m.h>\n"}};
  request.options = "-iquote " + (d / "q");
  const std::string before = key_of(request);
  write_file(d / "q/m.h", "int after;\n");
  EXPECT_NE(key_of(request), before);
}

// And from a header found in an -iquote folder: the search goes on through
// the later -iquote folders, then the -I ones.
TEST(IncludeRegressionsTest, IncludeNextInAQuoteFolderGoesOnThroughTheQuoteFolders) {
  TempFolder d;
  write_file(d / "q1/x.h", "#include_next <m.h>\n");
  write_file(d / "q2/m.h", "int before;\n");
  KernelRequest request;
  request.source = "#include \"x.h\"\n";
  request.options = "-iquote " + (d / "q1") + " -iquote " + (d / "q2");
  const std::string before = key_of(request);
  write_file(d / "q2/m.h", "int after;\n");
  EXPECT_NE(key_of(request), before);
}

// A computed #include_next resumes after the includer's folder too: the
// m.h beside x.h is not the one gcc reads, d2/m.h is.
TEST(IncludeRegressionsTest, ComputedIncludeNextLooksPastTheIncludersFolder) {
  TempFolder d;
  write_file(d / "d1/x.h", "#define HN <m.h>\n#include_next HN\n");
  write_file(d / "d1/m.h", "int m1;\n");
  write_file(d / "d2/m.h", "int before;\n");
  KernelRequest request;
  request.source = "#include <x.h>\n";
  request.options = "-I " + (d / "d1") + " -I " + (d / "d2");
  const std::string before = key_of(request);
  write_file(d / "d2/m.h", "int after;\n");
  EXPECT_NE(key_of(request), before);
}

// __has_include_next looks only past the folder the includer was found in:
// y.h beside x.h does not count, and a y.h created in a later folder turns
// the test true (gcc -E prints "int yes;" then).
TEST(IncludeRegressionsTest, HasIncludeNextLooksPastTheIncludersFolder) {
  TempFolder d;
  write_file(d / "d1/x.h", "#if __has_include_next(<y.h>)\nint yes;\n#endif\n");
  write_file(d / "d1/y.h", "int y1;\n");
  std::filesystem::create_directories(d / "d2");
  KernelRequest request;
  request.source = "#include <x.h>\n";
  request.options = "-I " + (d / "d1") + " -I " + (d / "d2");
  const std::string before = key_of(request);
  write_file(d / "d2/y.h", "int y2;\n");
  EXPECT_NE(key_of(request), before);
}

// `#if __has_include(CFG)` then `#include CFG`, the usual way to include
// a header that may be missing: the header is found by both, and its own
// includes must be followed (gcc -E prints "int after;" after the edit).
// Found by fuzz_include_graph in 4 s (gcc read n.h, which the key did not
// hold: a computed include is settled once per expression and includer,
// and the __has_include settled it first).
TEST(IncludeRegressionsTest, HeaderTestedThenIncludedThroughAMacroIsFollowed) {
  TempFolder d;
  write_file(d / "i/c.h", "#include \"n.h\"\n");
  write_file(d / "i/n.h", "int before;\n");
  KernelRequest request;
  request.source = "#define CFG \"c.h\"\n#if __has_include(CFG)\n#include CFG\n#endif\n";
  request.options = "-I " + (d / "i");
  const std::string before = key_of(request);
  write_file(d / "i/n.h", "int after;\n");
  EXPECT_NE(key_of(request), before);
}

// One macro with two definitions, <m.h> (-D) and "m.h" (the source, which
// gcc uses: it finds the in-memory m.h beside the source): both names are
// searched, each its own way. Found by fuzz_include_graph (gcc read a
// header that only the quoted search finds; the key held no header).
TEST(IncludeRegressionsTest, AMacroDefinedAsBothHeaderFormsIsSearchedBothWays) {
  KernelRequest request;
  request.source = "#define HB \"m.h\"\n#include HB\n";
  request.headers = {{"m.h", "int before;\n"}};
  request.options = "'-DHB=<m.h>'";
  const std::string before = key_of(request);
  request.headers = {{"m.h", "int after;\n"}};
  EXPECT_NE(key_of(request), before);
}

// A definition learned late still counts: H3 is first settled as "y.h"
// (-D), and def.h, reached through the computed #include H1 of m.h,
// redefines it as "x.h" before the source's #include H3, which reads x.h.
TEST(IncludeRegressionsTest, ComputedIncludeSeesADefinitionLearnedLater) {
  TempFolder d;
  write_file(d / "i/def.h", "#undef H3\n#define H3 \"x.h\"\n");
  write_file(d / "i/x.h", "int before;\n");
  write_file(d / "i/y.h", "int y;\n");
  KernelRequest request;
  request.source = "#include \"m.h\"\n#include H3\n";
  request.headers = {{"m.h", "#include H1\n"}};
  request.options = "-I " + (d / "i") + " '-DH1=\"def.h\"' '-DH3=\"y.h\"'";
  const std::string before = key_of(request);
  write_file(d / "i/x.h", "int after;\n");
  EXPECT_NE(key_of(request), before);
}

// The working folder, for relative folders in options; restored after.
class WorkingFolder {
 public:
  explicit WorkingFolder(const std::string& path) : saved_(std::filesystem::current_path()) {
    std::filesystem::current_path(path);
  }
  ~WorkingFolder() { std::filesystem::current_path(saved_); }
  WorkingFolder(const WorkingFolder&) = delete;
  WorkingFolder& operator=(const WorkingFolder&) = delete;

 private:
  std::filesystem::path saved_;
};

// A computed include is settled once per includer; an in-memory header
// d/a.h and the file d/a.h that -I d finds are two includers, each with
// its own folder: the in-memory one reads the in-memory d/x.h, the one on
// disk reads d/x.h on disk (gcc -E prints both).
TEST(IncludeRegressionsTest, ComputedIncludeInTwoIncludersOfOneNameIsSettledForEach) {
  TempFolder d;
  const WorkingFolder cwd(d.path());
  write_file(d / "d/a.h", "#include H\n");
  write_file(d / "d/x.h", "int before;\n");
  KernelRequest request;
  request.source = "#include \"d/a.h\"\n#include <a.h>\n";
  request.headers = {{"d/a.h", "#include H\n"}, {"d/x.h", "int in_memory;\n"}};
  request.options = "-I d '-DH=\"x.h\"'";
  const std::string before = key_of(request);
  write_file(d / "d/x.h", "int after;\n");
  EXPECT_NE(key_of(request), before);
}

// gcc drops an -I (or -iquote) folder that is also a system folder
// (-isystem or -idirafter; compared by inode): it is searched only where
// the system folders are. Here b/x.h is what gcc reads, not a/x.h.
TEST(IncludeRegressionsTest, AnIncludeFolderThatIsAlsoASystemFolderIsSearchedAsOne) {
  TempFolder d;
  write_file(d / "a/x.h", "int in_a;\n");
  write_file(d / "b/x.h", "int in_b;\n");
  for (const std::string system : {"-isystem ", "-idirafter "}) {
    KernelRequest request;
    request.source = "#include <x.h>\n";
    request.options = "-I " + (d / "a") + " -I " + (d / "b") + " " + system + (d / "a");
    const std::string before = key_of(request);
    write_file(d / "b/x.h", "int in_b_" + system.substr(1, 3) + ";\n");
    EXPECT_NE(key_of(request), before) << system;
  }
  KernelRequest quoted;
  quoted.source = "#include \"x.h\"\n";
  quoted.options = "-iquote " + (d / "a") + " -I " + (d / "b") + " -isystem " + (d / "a");
  const std::string before = key_of(quoted);
  write_file(d / "b/x.h", "int in_b_quoted;\n");
  EXPECT_NE(key_of(quoted), before);
}

}  // namespace
}  // namespace kcache
