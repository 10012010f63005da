// KCACHE_RECORD: every kernel a program asks for lands in the manifest
// once, with what a compile needs, from one process or many; a line cut
// short by a killed writer is ended and skipped; a manifest that cannot be
// written warns once and never fails a request.
#include <gtest/gtest.h>
#include <kcache/advanced.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <atomic>
#include <filesystem>
#include <nlohmann/json.hpp>
#include <set>
#include <sstream>
#include <string>
#include <vector>

#include "fakes/cache_fixture.h"
#include "fakes/file_wrapper.h"
#include "package/kernel_recorder.h"

namespace kcache {
namespace {

using json = nlohmann::json;
using testing::read_file;
using testing::write_file;

class KernelRecorderTest : public testing::CacheFixture {
 protected:
  void SetUp() override {
    CacheFixture::SetUp();
    env.vars["KCACHE_RECORD"] = manifest_;
  }

  // Each line of the manifest (the last one only if ended).
  std::vector<std::string> lines() const {
    std::vector<std::string> out;
    std::istringstream text(read_file(manifest_));
    for (std::string line; std::getline(text, line);) out.push_back(line);
    return out;
  }

  std::vector<json> records() const {
    std::vector<json> out;
    for (const auto& line : lines()) {
      json parsed = json::parse(line, nullptr, false);
      if (parsed.is_object()) out.push_back(std::move(parsed));
    }
    return out;
  }

  std::string manifest_ = dir / "kernels.jsonl";
};

TEST_F(KernelRecorderTest, EachKernelIsRecordedOnceWithWhatItsCompileNeeds) {
  compiler.library_path = "/opt/vendor/lib/libfake.so.1";  // what it compiles through
  auto cache = open();
  KernelRequest first = request("kernel void a() {}");
  first.options = "-DN=4 -I" + dir / "inc";
  first.headers = {{"m.h", "#define M 1\n"}};
  first.include_dirs = {dir / "more"};
  for (int i = 0; i < 3; ++i) ASSERT_TRUE(cache->get_or_compile(first, compiler).is_ok());
  KernelRequest second = request("kernel void b() {}");
  ASSERT_TRUE(cache->get_or_compile(second, compiler).is_ok());
  // Another process asking again adds nothing.
  auto later = open();
  ASSERT_TRUE(later->get_or_compile(first, compiler).is_ok());
  ASSERT_TRUE(later->get_or_compile(second, compiler).is_ok());

  const auto got = records();
  ASSERT_EQ(got.size(), 2u) << read_file(manifest_);
  ASSERT_EQ(lines().size(), 2u);
  const json& a = got[0];
  auto key = AdvancedCache(*cache).key_for(first, compiler);
  ASSERT_TRUE(key.is_ok());
  EXPECT_EQ(a["kcache_manifest"], 1);
  EXPECT_EQ(a["key"], key->first.hex());
  EXPECT_EQ(a["backend"], "fake");
  EXPECT_EQ(a["compiler"]["id"], "fake-compiler");
  EXPECT_EQ(a["compiler"]["version"], "1.0");
  EXPECT_EQ(a["compiler"]["library"], "/opt/vendor/lib/libfake.so.1");
  EXPECT_EQ(a["target"]["arch"], "gfx906");
  EXPECT_EQ(a["target"]["units"], 60);
  EXPECT_EQ(a["options"], first.options);
  EXPECT_EQ(a["kernel_names"], json::array({"k"}));
  EXPECT_EQ(a["include_dirs"], json::array({dir / "more"}));
  EXPECT_EQ(a["headers"][0]["name"], "m.h");
  EXPECT_EQ(a["headers"][0]["content"], "#define M 1\n");
  EXPECT_EQ(a["source"], first.source);
  EXPECT_FALSE(a.contains("source_name")) << a;
  EXPECT_EQ(got[1]["source"], second.source);
}

// The program's name is part of the key (the NVRTC shim names every
// program): a manifest without it packs kernels no program asks for.
TEST_F(KernelRecorderTest, TheProgramsNameIsRecordedWhenGiven) {
  auto cache = open();
  KernelRequest named = request("kernel void n() {}");
  named.source_name = "sub/gemm.cu";
  ASSERT_TRUE(cache->get_or_compile(named, compiler).is_ok());
  KernelRequest unnamed = request("kernel void n() {}");
  ASSERT_TRUE(cache->get_or_compile(unnamed, compiler).is_ok());
  const auto got = records();
  ASSERT_EQ(got.size(), 2u) << read_file(manifest_);  // two names, two keys
  EXPECT_EQ(got[0]["source_name"], "sub/gemm.cu");
  EXPECT_FALSE(got[1].contains("source_name")) << got[1];
  EXPECT_FALSE(got[1]["compiler"].contains("library")) << got[1];  // it loads none
}

TEST_F(KernelRecorderTest, HeadersOnDiskAreRecordedAsTheKeySawThem) {
  write_file(dir / "inc/h.h", "#define H 1\n");
  auto cache = open();
  KernelRequest with_header = request("#include \"h.h\"\nkernel void a() {}");
  with_header.include_dirs = {dir / "inc"};
  ASSERT_TRUE(cache->get_or_compile(with_header, compiler).is_ok());
  const auto got = records();
  ASSERT_EQ(got.size(), 1u);
  ASSERT_EQ(got[0]["key_headers"].size(), 1u);
  const std::string field = got[0]["key_headers"][0];
  EXPECT_TRUE(field.starts_with("h.h ")) << field;
  EXPECT_NE(field.find("sha256:"), std::string::npos) << field;
}

TEST_F(KernelRecorderTest, KernelsAreRecordedWithTheCacheOff) {
  env.vars["KCACHE_DISABLE_CACHE"] = "1";
  auto cache = open();
  ASSERT_TRUE(cache->get_or_compile(request("kernel void off() {}"), compiler).is_ok());
  EXPECT_EQ(records().size(), 1u);
}

TEST_F(KernelRecorderTest, TextThatIsNotUtf8IsRecordedInHex) {
  auto cache = open();
  ASSERT_TRUE(
      cache->get_or_compile(request("kernel void x() { /* \xff\xfe */ }"), compiler).is_ok());
  const auto got = records();
  ASSERT_EQ(got.size(), 1u);
  ASSERT_TRUE(got[0]["source"].is_object());
  const std::string hex = got[0]["source"]["hex"];
  EXPECT_NE(hex.find("fffe"), std::string::npos) << hex;
}

TEST_F(KernelRecorderTest, ManyProcessesRecordEachKernelOnce) {
  constexpr int kProcesses = 6;
  constexpr int kKernels = 10;
  std::vector<pid_t> children;
  for (int p = 0; p < kProcesses; ++p) {
    const pid_t child = ::fork();
    ASSERT_GE(child, 0);
    if (child == 0) {
      auto cache = open_cache_with_env({}, env);
      bool fine = cache.is_ok();
      // Each process its own order, every process every kernel.
      for (int i = 0; fine && i < kKernels; ++i) {
        const int k = (i + p * 3) % kKernels;
        fine =
            (*cache)
                ->get_or_compile(request("kernel void k" + std::to_string(k) + "() {}"), compiler)
                .is_ok();
      }
      ::_exit(fine ? 0 : 1);
    }
    children.push_back(child);
  }
  for (pid_t child : children) {
    int status = 0;
    ASSERT_EQ(::waitpid(child, &status, 0), child);
    EXPECT_TRUE(WIFEXITED(status) && WEXITSTATUS(status) == 0);
  }
  const auto got = records();
  EXPECT_EQ(got.size(), static_cast<std::size_t>(kKernels)) << read_file(manifest_);
  EXPECT_EQ(lines().size(), static_cast<std::size_t>(kKernels));
  std::set<std::string> keys;
  for (const auto& record : got) keys.insert(record["key"].get<std::string>());
  EXPECT_EQ(keys.size(), static_cast<std::size_t>(kKernels));
}

TEST_F(KernelRecorderTest, ALineAKilledWriterLeftUnendedIsEndedAndSkipped) {
  write_file(manifest_, "{\"kcache_manifest\":1,\"key\":\"00ff");
  auto cache = open();
  ASSERT_TRUE(cache->get_or_compile(request("kernel void a() {}"), compiler).is_ok());
  const auto all = lines();
  ASSERT_EQ(all.size(), 2u) << read_file(manifest_);
  EXPECT_EQ(all[0], "{\"kcache_manifest\":1,\"key\":\"00ff");
  EXPECT_EQ(records().size(), 1u);
  // A later process reads past the bad line and adds nothing twice.
  auto later = open();
  ASSERT_TRUE(later->get_or_compile(request("kernel void a() {}"), compiler).is_ok());
  ASSERT_TRUE(later->get_or_compile(request("kernel void b() {}"), compiler).is_ok());
  EXPECT_EQ(records().size(), 2u) << read_file(manifest_);
  EXPECT_EQ(lines().size(), 3u);
}

// Cuts the file to nothing just before each write to it, as someone
// emptying the manifest (no lock taken) between a recorder's look at its
// size and its write would.
class CutsBeforeWrites final : public EnvWrapper {
 public:
  explicit CutsBeforeWrites(Env& target) : EnvWrapper(target) {}
  Result<std::unique_ptr<File>> open_file(const std::string& path, OpenMode mode,
                                          mode_t create_mode) override {
    auto file = EnvWrapper::open_file(path, mode, create_mode);
    if (!file) return file;
    return std::unique_ptr<File>(std::make_unique<Cut>(std::move(*file), path));
  }

 private:
  class Cut final : public File {
   public:
    Cut(std::unique_ptr<File> file, std::string path)
        : file_(std::move(file)), path_(std::move(path)) {}
    Result<std::uint64_t> size() const override { return file_->size(); }
    FileId id() const override { return file_->id(); }
    Status read_at(std::uint64_t offset, std::span<std::uint8_t> out) const override {
      return file_->read_at(offset, out);
    }
    Status write_at(std::uint64_t offset, std::span<const std::uint8_t> data) override {
      if (::truncate(path_.c_str(), 0) != 0) return Status::io_error("truncate " + path_);
      return file_->write_at(offset, data);
    }
    Status truncate(std::uint64_t size) override { return file_->truncate(size); }
    Status sync() override { return file_->sync(); }

   private:
    std::unique_ptr<File> file_;
    std::string path_;
  };
};

TEST_F(KernelRecorderTest, AManifestEmptiedJustBeforeAWriteGetsTheLineWithNoHoleBeforeIt) {
  auto first = open();
  ASSERT_TRUE(first->get_or_compile(request("kernel void a() {}"), compiler).is_ok());
  ASSERT_TRUE(first->get_or_compile(request("kernel void b() {}"), compiler).is_ok());
  ASSERT_EQ(records().size(), 2u);
  CutsBeforeWrites cutting(env);
  auto later = open_cache_with_env({}, cutting);
  ASSERT_TRUE(later.is_ok());
  ASSERT_TRUE((*later)->get_or_compile(request("kernel void c() {}"), compiler).is_ok());
  const std::string text = read_file(manifest_);
  EXPECT_EQ(text.find('\0'), std::string::npos) << "a hole of " << text.size() << " bytes";
  ASSERT_EQ(lines().size(), 1u) << text;
  EXPECT_NE(lines()[0].find("kernel void c()"), std::string::npos);
}

TEST_F(KernelRecorderTest, AKernelRecordedBeforeTheManifestWasEmptiedIsRecordedAgain) {
  auto cache = open();
  ASSERT_TRUE(cache->get_or_compile(request("kernel void a() {}"), compiler).is_ok());
  write_file(manifest_, "");
  ASSERT_TRUE(cache->get_or_compile(request("kernel void a() {}"), compiler).is_ok());
  ASSERT_TRUE(cache->get_or_compile(request("kernel void a() {}"), compiler).is_ok());
  ASSERT_EQ(records().size(), 1u) << read_file(manifest_);
  EXPECT_NE(lines()[0].find("kernel void a()"), std::string::npos);
}

TEST_F(KernelRecorderTest, AManifestRewrittenToItsOwnLengthIsReadAgainNotTakenAsRead) {
  auto cache = open();
  ASSERT_TRUE(cache->get_or_compile(request("kernel void a() {}"), compiler).is_ok());
  ASSERT_TRUE(cache->get_or_compile(request("kernel void b() {}"), compiler).is_ok());
  const std::size_t length = read_file(manifest_).size();
  // Another program's manifest, of kernel z, padded with a blank line to
  // the length this process read: its size alone tells nothing.
  const std::string elsewhere = dir / "elsewhere.jsonl";
  env.vars["KCACHE_RECORD"] = elsewhere;
  ASSERT_TRUE(open()->get_or_compile(request("kernel void z() {}"), compiler).is_ok());
  std::string rewritten = read_file(elsewhere);
  ASSERT_LT(rewritten.size() + 1, length);
  rewritten += std::string(length - rewritten.size() - 1, ' ') + "\n";
  write_file(manifest_, rewritten);
  ASSERT_TRUE(cache->get_or_compile(request("kernel void c() {}"), compiler).is_ok());
  ASSERT_TRUE(cache->get_or_compile(request("kernel void a() {}"), compiler).is_ok());
  // z, the blank line, then c and a: once each, none of them lost.
  std::vector<std::string> sources;
  for (const auto& record : records()) sources.push_back(record["source"].get<std::string>());
  EXPECT_EQ(sources, (std::vector<std::string>{"kernel void z() {}", "kernel void c() {}",
                                               "kernel void a() {}"}))
      << read_file(manifest_);
}

TEST_F(KernelRecorderTest, AManifestThatCannotBeWrittenWarnsOnceAndFailsNothing) {
  env.vars["KCACHE_RECORD"] = dir / "no/such/folder/kernels.jsonl";
  auto cache = open();
  for (int i = 0; i < 3; ++i) {
    EXPECT_TRUE(
        cache->get_or_compile(request("kernel void k" + std::to_string(i) + "() {}"), compiler)
            .is_ok());
  }
  EXPECT_EQ(log_lines_containing("Cannot record kernels in " + dir / "no/such/folder"), 1);
  EXPECT_EQ(log_lines_containing("KCACHE_RECORD"), 1);
}

// The manifest is what `kcache pack` turns into compiler commands: one
// another user could have written is not added to (a program's sources
// would land in their file, and their lines in the user's package).
TEST_F(KernelRecorderTest, AManifestOthersCanWriteIsRefusedWithOneWarningAndFailsNothing) {
  write_file(manifest_, "");
  ASSERT_EQ(::chmod(manifest_.c_str(), 0666), 0);
  auto cache = open();
  for (int i = 0; i < 3; ++i) {
    EXPECT_TRUE(
        cache->get_or_compile(request("kernel void k" + std::to_string(i) + "() {}"), compiler)
            .is_ok());
  }
  EXPECT_EQ(read_file(manifest_), "");
  EXPECT_EQ(log_lines_containing("Cannot record kernels in " + manifest_), 1);
  EXPECT_EQ(log_lines_containing("is writable by others (mode 0666)"), 1);
  EXPECT_EQ(log_lines_containing("KCACHE_RECORD_SHARED=1"), 1);
}

TEST_F(KernelRecorderTest, AManifestInAFolderOthersCanWriteNeedsTheStickyBit) {
  const std::string team = dir / "team";
  std::filesystem::create_directories(team);
  env.vars["KCACHE_RECORD"] = team + "/kernels.jsonl";
  ASSERT_EQ(::chmod(team.c_str(), 0777), 0);
  ASSERT_TRUE(open()->get_or_compile(request("kernel void a() {}"), compiler).is_ok());
  EXPECT_FALSE(std::filesystem::exists(team + "/kernels.jsonl"));
  EXPECT_EQ(log_lines_containing("folder " + team + " is writable by others"), 1);
  // Sticky, as /tmp is: no one else can replace the user's file there.
  ASSERT_EQ(::chmod(team.c_str(), 01777), 0);
  ASSERT_TRUE(open()->get_or_compile(request("kernel void a() {}"), compiler).is_ok());
  EXPECT_NE(read_file(team + "/kernels.jsonl").find("kernel void a()"), std::string::npos);
}

TEST_F(KernelRecorderTest, AManifestSharedOnPurposeIsAddedTo) {
  write_file(manifest_, "");
  ASSERT_EQ(::chmod(manifest_.c_str(), 0666), 0);
  env.vars["KCACHE_RECORD_SHARED"] = "1";
  ASSERT_TRUE(open()->get_or_compile(request("kernel void a() {}"), compiler).is_ok());
  EXPECT_EQ(records().size(), 1u);
  EXPECT_EQ(log_lines_containing("Cannot record"), 0);
}

TEST_F(KernelRecorderTest, ANewManifestIsReadableByItsOwnerAlone) {
  const mode_t old_umask = ::umask(022);
  ASSERT_TRUE(open()->get_or_compile(request("kernel void a() {}"), compiler).is_ok());
  env.vars["KCACHE_RECORD"] = dir / "shared.jsonl";
  env.vars["KCACHE_RECORD_SHARED"] = "true";
  ASSERT_TRUE(open()->get_or_compile(request("kernel void a() {}"), compiler).is_ok());
  ::umask(old_umask);
  struct stat st {};
  ASSERT_EQ(::stat(manifest_.c_str(), &st), 0);
  EXPECT_EQ(st.st_mode & 0777, 0600u);
  ASSERT_EQ(::stat((dir / "shared.jsonl").c_str(), &st), 0);
  EXPECT_EQ(st.st_mode & 0777, 0644u);  // as the umask allows
}

TEST_F(KernelRecorderTest, TheUsersOwnLinkToTheManifestIsFollowed) {
  const std::string real = dir / "elsewhere/kernels.jsonl";
  std::filesystem::create_directories(dir / "elsewhere");
  write_file(real, "");
  std::filesystem::create_symlink(real, manifest_);
  ASSERT_TRUE(open()->get_or_compile(request("kernel void a() {}"), compiler).is_ok());
  EXPECT_NE(read_file(real).find("kernel void a()"), std::string::npos);
  EXPECT_TRUE(std::filesystem::is_symlink(manifest_));
  EXPECT_EQ(log_lines_containing("Cannot record"), 0);
}

// Reads of the manifest that find it shorter than its size said, the
// first `cuts` times: one who empties it (taking no lock) cut it between
// a recorder's look at its size and its read.
class CutWhileRead final : public EnvWrapper {
 public:
  CutWhileRead(Env& target, int cuts) : EnvWrapper(target), cuts_(cuts) {}
  Result<std::unique_ptr<File>> open_file(const std::string& path, OpenMode mode,
                                          mode_t create_mode) override {
    auto file = EnvWrapper::open_file(path, mode, create_mode);
    if (!file) return file;
    return std::unique_ptr<File>(std::make_unique<Cut>(std::move(*file), cuts_));
  }

 private:
  class Cut final : public testing::FileWrapper {
   public:
    Cut(std::unique_ptr<File> file, std::atomic<int>& cuts)
        : FileWrapper(std::move(file)), cuts_(cuts) {}
    Status read_at(std::uint64_t offset, std::span<std::uint8_t> out) const override {
      if (cuts_.fetch_sub(1) > 0) return Status::corruption("the file is shorter than expected");
      return FileWrapper::read_at(offset, out);
    }

   private:
    std::atomic<int>& cuts_;
  };
  std::atomic<int> cuts_;
};

TEST_F(KernelRecorderTest, AManifestCutWhileItIsReadIsReadAgainAndRecordingGoesOn) {
  auto first = open();
  ASSERT_TRUE(first->get_or_compile(request("kernel void a() {}"), compiler).is_ok());
  CutWhileRead cutting(env, 3);
  CacheOptions options;
  options.log_sink = [this](LogLevel, std::string_view line) {
    std::lock_guard lock(log_mutex);
    log.emplace_back(line);
  };
  auto later = open_cache_with_env(options, cutting);
  ASSERT_TRUE(later.is_ok());
  ASSERT_TRUE((*later)->get_or_compile(request("kernel void b() {}"), compiler).is_ok());
  ASSERT_TRUE((*later)->get_or_compile(request("kernel void c() {}"), compiler).is_ok());
  EXPECT_EQ(records().size(), 3u) << read_file(manifest_);
  EXPECT_EQ(log_lines_containing("recording stops"), 0);
}

}  // namespace
}  // namespace kcache
