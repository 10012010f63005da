#include "compiler/compiler_facts.h"

#include <gtest/gtest.h>

#include <filesystem>

#include "fakes/temp_folder.h"

namespace kcache {
namespace {

using testing::TempFolder;
using testing::write_file;

// A build's fingerprint follows its files' builds (build_parts.h): a file
// rebuilt (other bytes) is another build; a link to a file is that file;
// the same files elsewhere (another folder, inode and time: another
// machine's install) are the same build.
TEST(CompilerFactsTest, TheFingerprintIsTheFilesBuilds) {
  TempFolder dir;
  write_file(dir / "lib.so", "one");
  std::filesystem::create_symlink(dir / "lib.so", dir / "lib.so.1");
  const std::string first = build_fingerprint({dir / "lib.so"}, Env::posix());
  EXPECT_TRUE(first.starts_with("sha256:"));
  EXPECT_EQ(build_fingerprint({dir / "lib.so.1", dir / "lib.so"}, Env::posix()), first);
  std::filesystem::create_directories(dir / "elsewhere");
  write_file(dir / "elsewhere/lib.so", "one");
  EXPECT_EQ(build_fingerprint({dir / "elsewhere/lib.so"}, Env::posix()), first);
  write_file(dir / "lib.so", "two, rebuilt");
  EXPECT_NE(build_fingerprint({dir / "lib.so"}, Env::posix()), first);
  EXPECT_NE(build_fingerprint({dir / "missing.so"}, Env::posix()), first);
}

// A folder inside one already counted (a toolkit's include/cccl inside
// include) is not walked again: its files are in the outer one's listing.
TEST(CompilerFactsTest, AFolderInsideACountedOneIsNotCountedAgain) {
  TempFolder dir;
  std::filesystem::create_directories(dir / "include/cccl");
  write_file(dir / "include/cuda_fp16.h", "half");
  write_file(dir / "include/cccl/cub.cuh", "cub");
  EXPECT_EQ(build_fingerprint({dir / "include", dir / "include/cccl"}, Env::posix()),
            build_fingerprint({dir / "include"}, Env::posix()));
  EXPECT_NE(build_fingerprint({dir / "include/cccl", dir / "include"}, Env::posix()),
            build_fingerprint({dir / "include/cccl"}, Env::posix()));
}

// A record is used only while every file it names is as it was.
TEST(CompilerFactsTest, ARecordHoldsWhileItsFilesDo) {
  TempFolder dir;
  write_file(dir / "lib.so", "one");
  Env& env = Env::posix();
  CompilerFacts facts;
  facts.facts = {{"library", dir / "lib.so"}, {"arch", "90"}};
  facts.files = {dir / "lib.so"};
  store_compiler_facts(dir / "records", "x", facts, env);
  auto loaded = load_compiler_facts(dir / "records", "x", env);
  ASSERT_TRUE(loaded.has_value());
  EXPECT_EQ(fact(*loaded, "arch"), std::optional<std::string>("90"));
  EXPECT_FALSE(load_compiler_facts(dir / "records", "y", env).has_value());
  write_file(dir / "lib.so", "a new build");
  EXPECT_FALSE(load_compiler_facts(dir / "records", "x", env).has_value());
  // A damaged record is none.
  store_compiler_facts(dir / "records", "x", facts, env);
  std::string text = testing::read_file(dir / "records/x.facts");
  text[text.size() / 2] ^= 1;
  write_file(dir / "records/x.facts", text);
  EXPECT_FALSE(load_compiler_facts(dir / "records", "x", env).has_value());
}

}  // namespace
}  // namespace kcache
