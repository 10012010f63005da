#include "store/system/package_fit.h"

#include <gtest/gtest.h>

#include "format/entry.h"
#include "format/key_schema.h"

namespace kcache {
namespace {

const CompilerIdentity kMine{"opencl", "PoCL | cpu", "3.1 | build sha256:aa"};

Fields packed_for(const std::string& db, const std::vector<std::string>& compilers) {
  Fields metadata{{"db", db},
                  {"key_format", std::to_string(kKeySchemaVersion)},
                  {"entry_format", std::to_string(kEntryFormatVersion)}};
  for (const auto& c : compilers) metadata.emplace_back("compiler", c);
  return metadata;
}

TEST(PackageFitTest, ThePackageOfThisCompilerAndDatabaseFits) {
  EXPECT_EQ(unfit_reason(packed_for("cpu_4", {identity_text(kMine)}), "cpu_4", kMine),
            std::nullopt);
  // One of several compilers, and found as the arch-wide package.
  EXPECT_EQ(unfit_reason(packed_for("cpu_4", {"nvrtc | NVRTC | 12.4", identity_text(kMine)}), "cpu",
                         kMine),
            std::nullopt);
  // A package older than these fields says nothing: it is searched.
  EXPECT_EQ(unfit_reason({}, "cpu_4", kMine), std::nullopt);
}

// A command's identity ends its id with the name its input is given: a
// package of other sources by the same command and compiler fits (the
// request's key then simply misses); another command or version does not.
TEST(PackageFitTest, ACommandThatCompiledOtherSourcesIsTheSameToolchain) {
  const CompilerIdentity here{"command", "g1 | gcc -c {in} -o {out} | h.c", "id:g1"};
  EXPECT_EQ(unfit_reason(packed_for("cpu_4", {"command | g1 | gcc -c {in} -o {out} | f.c | id:g1"}),
                         "cpu_4", here),
            std::nullopt);
  EXPECT_TRUE(unfit_reason(packed_for("cpu_4", {"command | g1 | gcc -O2 -c {in} -o {out} | f.c | "
                                                "id:g1"}),
                           "cpu_4", here)
                  .has_value());
  EXPECT_TRUE(
      unfit_reason(packed_for("cpu_4", {"command | g1 | gcc -c {in} -o {out} | f.c | id:g2"}),
                   "cpu_4", here)
          .has_value());
  // What is between must be one name, not more of a command line.
  EXPECT_TRUE(unfit_reason(packed_for("cpu_4", {"command | g1 | gcc -c {in} -o {out} | x | f.c | "
                                                "id:g1"}),
                           "cpu_4", here)
                  .has_value());
}

TEST(PackageFitTest, EachMismatchIsSaid) {
  auto other_build = unfit_reason(
      packed_for("cpu_4", {"opencl | PoCL | cpu | 3.1 | build sha256:bb"}), "cpu_4", kMine);
  ASSERT_TRUE(other_build.has_value());
  EXPECT_NE(other_build->find("another opencl toolchain"), std::string::npos) << *other_build;
  EXPECT_NE(other_build->find("packed with 'build sha256:bb', here 'build sha256:aa'"),
            std::string::npos)
      << *other_build;
  auto one_part =
      unfit_reason(packed_for("cpu_4", {"opencl | PoCL | cpu | 3.1 | build sha256:bb"}), "cpu_4",
                   CompilerIdentity{"opencl", "PoCL | cpu", "3.1 | build sha256:cc"});
  ASSERT_TRUE(one_part.has_value());
  EXPECT_NE(one_part->find("packed with 'build sha256:bb', here 'build sha256:cc'"),
            std::string::npos)
      << *one_part;

  // Parts alike for long are shown from the word where they part (the
  // same 48 characters twice said nothing).
  auto long_alike = unfit_reason(
      packed_for("sm_90", {"nvrtc | nvrtc | nvrtc 13.0 (/usr/local/cuda-13.0/lib/libnvrtc.so.13); "
                           "build sha256:3b19eaf97aeb84efc55db1cfd9abe7e77c247ac643f8fc5e"}),
      "sm_90",
      CompilerIdentity{"nvrtc", "nvrtc",
                       "nvrtc 13.0 (/usr/local/cuda-13.0/lib/libnvrtc.so.13); "
                       "build sha256:dda35d59c1c35f9c5d979cee552169b2303d817627f6a2"});
  ASSERT_TRUE(long_alike.has_value());
  EXPECT_NE(
      long_alike->find("(packed with '...sha256:3b19eaf97aeb84efc55db1cfd9abe7e77c247ac64...', "
                       "here '...sha256:dda35d59c1c35f9c5d979cee552169b2303d81762...')"),
      std::string::npos)
      << *long_alike;

  // A digest that parts in its last digit: shown from within it, the
  // difference in what is shown (it was cut off before it).
  const std::string digest = "build sha256:" + std::string(63, 'a');
  auto late =
      unfit_reason(packed_for("sm_90", {"nvrtc | nvrtc | nvrtc 13.0; " + digest + "b"}), "sm_90",
                   CompilerIdentity{"nvrtc", "nvrtc", "nvrtc 13.0; " + digest + "c"});
  ASSERT_TRUE(late.has_value());
  EXPECT_NE(late->find("aaab', here '..."), std::string::npos) << *late;
  EXPECT_NE(late->find("aaac')"), std::string::npos) << *late;

  auto other_backend = unfit_reason(packed_for("cpu_4", {"nvrtc | NVRTC | 12.4"}), "cpu_4", kMine);
  ASSERT_TRUE(other_backend.has_value());
  EXPECT_NE(other_backend->find("no opencl kernels"), std::string::npos) << *other_backend;

  auto renamed = unfit_reason(packed_for("gpu_8", {identity_text(kMine)}), "cpu_4", kMine);
  ASSERT_TRUE(renamed.has_value());
  EXPECT_NE(renamed->find("holds kernels for gpu_8, not cpu_4"), std::string::npos) << *renamed;
  // "cpu" is not the arch of "cpux_4".
  EXPECT_TRUE(unfit_reason(packed_for("cpux_4", {identity_text(kMine)}), "cpu", kMine));

  Fields old_keys = packed_for("cpu_4", {identity_text(kMine)});
  old_keys[1].second = "1";
  auto old = unfit_reason(old_keys, "cpu_4", kMine);
  ASSERT_TRUE(old.has_value());
  EXPECT_NE(old->find("key format 1"), std::string::npos) << *old;
}

}  // namespace
}  // namespace kcache
