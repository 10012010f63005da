// What the cache does with what a compile reads: a header edited while its
// kernel compiles is not stored under the old key; a request kcache cannot
// key is compiled and never cached; an unchanged header is read once.
#include <kcache/admin.h>
#include <kcache/advanced.h>
#include <kcache/cache.h>

#include <gtest/gtest.h>

#include <filesystem>

#include "fakes/cache_fixture.h"
#include "fakes/temp_folder.h"

namespace kcache {
namespace {

using testing::write_file;

// A compiler whose output is the header it reads, and which can edit that
// header while it compiles (a user saving a file mid-build).
class HeaderReadingCompiler final : public Compiler {
 public:
  explicit HeaderReadingCompiler(std::string header) : header_(std::move(header)) {
    identity_ = {"fake", "reads-headers", "1"};
  }
  const CompilerIdentity& identity() const override { return identity_; }
  Result<Target> resolve_target(const Target& requested) const override { return requested; }
  Result<CompileOutput> compile(const KernelRequest&, const Target&) override {
    ++compiles;
    CompileOutput output;
    const std::string text = testing::read_file(header_);
    output.binary.assign(text.begin(), text.end());
    if (!edit_to.empty()) write_file(header_, edit_to);
    return output;
  }
  int compiles = 0;
  std::string edit_to;  // written over the header during the next compile

 private:
  std::string header_;
  CompilerIdentity identity_;
};

// A compiler that says which files it read (as -MD -MF lets gcc say).
class ListingCompiler final : public Compiler {
 public:
  explicit ListingCompiler(std::vector<std::string> files) : files_(std::move(files)) {
    identity_ = {"fake", "lists-reads", "1"};
  }
  const CompilerIdentity& identity() const override { return identity_; }
  Result<Target> resolve_target(const Target& requested) const override { return requested; }
  Result<CompileOutput> compile(const KernelRequest&, const Target&) override {
    ++compiles;
    CompileOutput output;
    for (const auto& file : files_) {
      const std::string text = testing::read_file(file);
      output.binary.insert(output.binary.end(), text.begin(), text.end());
    }
    output.files_read = files_;
    return output;
  }
  int compiles = 0;

 private:
  std::vector<std::string> files_;
  CompilerIdentity identity_;
};

// Files as if written a minute ago: every stamp a minute older (an edit
// still moves it). A file written just now is never trusted by its stamp,
// and tests write their files just now.
class AgedEnv final : public EnvWrapper {
 public:
  explicit AgedEnv(Env& target) : EnvWrapper(target) {}
  Result<FileStamp> stamp(const std::string& path) const override {
    auto stamp = EnvWrapper::stamp(path);
    if (stamp) {
      stamp->modified_ns -= 60'000'000'000LL;
      stamp->changed_ns -= 60'000'000'000LL;
    }
    return stamp;
  }
};

class CacheInputsTest : public testing::CacheFixture {};

// Depend mode: what the compiler read, beyond what the key holds, is kept
// with the entry and checked on every hit.
TEST_F(CacheInputsTest, AFileOnlyTheCompilerKnewOfIsCheckedOnEveryHit) {
  write_file(dir / "sys/stdio.h", "v1");
  ListingCompiler lister({dir / "sys/stdio.h"});
  AgedEnv aged(env);
  auto open_aged = [&] { return std::move(*open_cache_with_env({}, aged)); };
  auto cache = open_aged();
  auto first = cache->get_or_compile(request(), lister);
  ASSERT_TRUE(first.is_ok()) << first.status().to_string();
  ASSERT_TRUE(first->metadata("read").has_value());
  EXPECT_NE(first->metadata("read")->find(dir / "sys/stdio.h"), std::string::npos);
  EXPECT_EQ(cache->get_or_compile(request(), lister)->tier, TierKind::kMemory);
  EXPECT_EQ(open_aged()->get_or_compile(request(), lister)->tier, TierKind::kUser);
  // The key is the same (the request did not change). Another size: the
  // aged stamps hide the tick guard, so the edit must show in the stamp.
  write_file(dir / "sys/stdio.h", "v2 edited");
  auto other_process = open_aged();
  for (Cache* c : {cache.get(), other_process.get()}) {
    auto after = c->get_or_compile(request(), lister);
    ASSERT_TRUE(after.is_ok());
    EXPECT_EQ(std::string(after->binary().begin(), after->binary().end()), "v2 edited")
        << tier_name(after->tier) << " " << (c == cache.get() ? "first" : "other");
  }
  EXPECT_EQ(lister.compiles, 2);  // the memory tier's copy was checked too
}

// A file the compiler read that changed within a tick of the compile may
// have changed while it was read: the binary is returned, not stored.
TEST_F(CacheInputsTest, AFileChangedAsTheCompileRanIsNotTrusted) {
  write_file(dir / "sys/fresh.h", "v1");
  // Stamped as new as the compile whatever the machine's load: a file
  // written just now is within the 20 ms tick only if the compile starts
  // within 20 ms (not so under TSan on a busy machine).
  std::filesystem::last_write_time(
      dir / "sys/fresh.h", std::filesystem::file_time_type::clock::now() + std::chrono::hours(1));
  ListingCompiler lister({dir / "sys/fresh.h"});
  auto cache = open();  // real stamps
  auto first = cache->get_or_compile(request(), lister);
  ASSERT_TRUE(first.is_ok());
  EXPECT_EQ(cache->stats().uncacheable, 1u);
  EXPECT_EQ(cache->get_or_compile(request(), lister)->tier, TierKind::kCompiled);
}

TEST_F(CacheInputsTest, AHeaderEditedWhileCompilingIsNotStored) {
  write_file(dir / "inc/h.h", "old");
  HeaderReadingCompiler reader(dir / "inc/h.h");
  KernelRequest req = request("#include <h.h>\n");
  req.include_dirs = {dir / "inc"};
  auto cache = open();
  reader.edit_to = "new";
  auto first = cache->get_or_compile(req, reader);
  ASSERT_TRUE(first.is_ok()) << first.status().to_string();
  EXPECT_EQ(first->tier, TierKind::kCompiled);
  EXPECT_EQ(cache->stats().uncacheable, 1u);
  // Neither key holds the binary of "old": the request with "new" compiles.
  reader.edit_to.clear();
  auto second = cache->get_or_compile(req, reader);
  ASSERT_TRUE(second.is_ok());
  EXPECT_EQ(second->tier, TierKind::kCompiled);
  EXPECT_EQ(std::string(second->binary().begin(), second->binary().end()), "new");
  auto third = open()->get_or_compile(req, reader);
  EXPECT_EQ(third->tier, TierKind::kUser);
  EXPECT_EQ(std::string(third->binary().begin(), third->binary().end()), "new");
  EXPECT_EQ(reader.compiles, 2);
}

// Edited and edited back while it compiles: the digest is as before, the
// stamp is not; the binary (built from the edit) is not stored (found by
// the review of issue 10).
TEST_F(CacheInputsTest, AHeaderEditedAndEditedBackWhileCompilingIsNotStored) {
  write_file(dir / "inc/h.h", "old");
  // As if written long before (the edits below then move its mtime).
  std::filesystem::last_write_time(
      dir / "inc/h.h", std::filesystem::file_time_type::clock::now() - std::chrono::hours(1));
  class EditsAndRestores final : public Compiler {
   public:
    explicit EditsAndRestores(std::string header) : header_(std::move(header)) {}
    const CompilerIdentity& identity() const override { return identity_; }
    Result<Target> resolve_target(const Target& t) const override { return t; }
    Result<CompileOutput> compile(const KernelRequest&, const Target&) override {
      ++compiles;
      write_file(header_, "new");
      CompileOutput output;
      const std::string text = testing::read_file(header_);
      output.binary.assign(text.begin(), text.end());
      write_file(header_, "old");
      return output;
    }
    int compiles = 0;

   private:
    std::string header_;
    CompilerIdentity identity_{"fake", "edits-and-restores", "1"};
  } compiler_that_edits(dir / "inc/h.h");
  KernelRequest req = request("#include <h.h>\n");
  req.include_dirs = {dir / "inc"};
  auto cache = open();
  auto first = cache->get_or_compile(req, compiler_that_edits);
  ASSERT_TRUE(first.is_ok()) << first.status().to_string();
  EXPECT_EQ(std::string(first->binary().begin(), first->binary().end()), "new");
  EXPECT_EQ(cache->stats().uncacheable, 1u);
  EXPECT_EQ(open()->get_or_compile(req, compiler_that_edits)->tier, TierKind::kCompiled);
}

TEST_F(CacheInputsTest, WhatCannotBeKeyedIsCompiledAndNeverCached) {
  CacheOptions options;
  options.log_level = LogLevel::kInfo;
  auto cache = open(options);
  KernelRequest req = request();
  req.options = "--frobnicate " + (dir / "plugin.so");  // an unknown option naming a file
  for (int i = 0; i < 2; ++i) {
    auto got = cache->get_or_compile(req, compiler);
    ASSERT_TRUE(got.is_ok()) << got.status().to_string();
    EXPECT_EQ(got->tier, TierKind::kCompiled);
  }
  EXPECT_EQ(compiler.compiles, 2);
  EXPECT_EQ(cache->stats().uncacheable, 2u);
  EXPECT_EQ(log_lines_containing("not cached: '" + (dir / "plugin.so") + "'"), 1);
  auto listed = CacheAdmin(*cache).list();
  ASSERT_TRUE(listed.is_ok());
  EXPECT_TRUE(listed->empty());
}

TEST_F(CacheInputsTest, DuplicateHeaderNamesAreAnErrorAndNothingCompiles) {
  auto cache = open();
  KernelRequest req = request("#include \"a.h\"\n");
  req.headers = {{"a.h", "1"}, {"a.h", "2"}};
  auto got = cache->get_or_compile(req, compiler);
  EXPECT_EQ(got.status().code(), StatusCode::kInvalidArgument);
  EXPECT_NE(got.status().message().find("a.h"), std::string::npos);
  EXPECT_EQ(compiler.compiles, 0);
}

// A binary the driver refuses is evicted, counted, compiled again, and
// never returned again: from the user tier, and from a package.
TEST_F(CacheInputsTest, ARejectedBinaryIsEvictedAndCompiledAgain) {
  CacheOptions no_memory;
  no_memory.memory_cache_size = 0;
  auto cache = open(no_memory);
  auto first = cache->get_or_compile(request(), compiler);
  ASSERT_TRUE(first.is_ok());
  auto stored = cache->get_or_compile(request(), compiler);
  ASSERT_EQ(stored->tier, TierKind::kUser);
  AdvancedCache(*cache).reject(*stored, "CUDA_ERROR_INVALID_IMAGE");
  EXPECT_EQ(cache->stats().rejected, 1u);
  EXPECT_EQ(log_lines_containing("The driver refused the binary of kernel"), 1);
  auto again = cache->get_or_compile(request(), compiler);
  EXPECT_EQ(again->tier, TierKind::kCompiled);
  EXPECT_EQ(compiler.compiles, 2);

  // The same entry in a package: passed over for the rest of the process.
  std::filesystem::create_directories(dir / "system");
  auto exported = CacheAdmin(*cache).export_db("gfx906_60", dir / "system/gfx906_60.kdb");
  ASSERT_TRUE(exported.is_ok()) << exported.status().to_string();
  ASSERT_TRUE(CacheAdmin(*cache).clear().is_ok());
  auto from_package = open(no_memory);
  auto packaged = from_package->get_or_compile(request(), compiler);
  ASSERT_EQ(packaged->tier, TierKind::kSystem);
  AdvancedCache(*from_package).reject(*packaged, "CUDA_ERROR_INVALID_IMAGE");
  auto rebuilt = from_package->get_or_compile(request(), compiler);
  EXPECT_EQ(rebuilt->tier, TierKind::kCompiled);
  EXPECT_EQ(from_package->get_or_compile(request(), compiler)->tier, TierKind::kUser);
}

}  // namespace
}  // namespace kcache
