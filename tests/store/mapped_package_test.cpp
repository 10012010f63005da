// The system tier lends entries from a mapping of the package, and a
// package changed or truncated in place while mapped is read again, never
// served stale and never a crash (docs/design.md §3.2).
#include <gtest/gtest.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <string>
#include <vector>

#include "base/hash.h"
#include "fakes/counting_events.h"
#include "fakes/file_wrapper.h"
#include "fakes/stamp_counting_env.h"
#include "fakes/temp_folder.h"
#include "format/kdb_file.h"
#include "store/system/system_tier.h"

namespace kcache {
namespace {

using testing::CountingEvents;
using testing::TempFolder;

// An entry whose binary is `size` bytes of `fill`.
Entry entry_of(const std::string& name, std::size_t size, char fill) {
  Entry entry;
  entry.material = "name " + name + "\n";
  entry.key = CacheKey(xxh3_128(entry.material));
  const std::string binary(size, fill);
  entry.storage =
      ByteBuffer::copy_of({reinterpret_cast<const std::uint8_t*>(binary.data()), binary.size()});
  entry.payload_size = size;
  return entry;
}

std::string package_bytes(const TempFolder& dir, const std::vector<Entry>& entries) {
  std::vector<std::pair<CacheKey, std::vector<std::uint8_t>>> encoded;
  for (const auto& e : entries) encoded.emplace_back(e.key, *encode_entry(e, Compression::kNone));
  const std::string scratch = dir / "scratch.kdb";
  EXPECT_TRUE(write_kdb(Env::posix(), scratch, encoded, {}).is_ok());
  std::string bytes = testing::read_file(scratch);
  std::filesystem::remove(scratch);
  return bytes;
}

// Writes `bytes` over `path` in place: the same inode, as `cp` does.
void rewrite_in_place(const std::string& path, const std::string& bytes) {
  std::ofstream out(path, std::ios::binary | std::ios::trunc);
  out << bytes;
  ASSERT_TRUE(out.good());
}

class MappedPackageTest : public ::testing::Test {
 protected:
  void SetUp() override { ::chmod(dir_.path().c_str(), 0700); }
  std::unique_ptr<Tier> tier() {
    return make_system_tier(dir_.path(), {}, Env::posix(), log_, events_);
  }
  std::optional<Entry> get(Tier& tier, const Entry& wanted) {
    auto got = tier.get(names_, wanted.key);
    EXPECT_TRUE(got.is_ok()) << got.status().message();
    return got ? std::move(*got) : std::nullopt;
  }
  static std::string binary(const Entry& entry) {
    return {reinterpret_cast<const char*>(entry.payload().data()), entry.payload().size()};
  }
  int warnings_with(const std::string& text) const {
    int n = 0;
    for (const auto& line : lines_) n += line.find(text) != std::string::npos ? 1 : 0;
    return n;
  }

  TempFolder dir_;
  std::vector<std::string> lines_;
  Logger log_{LogLevel::kWarning,
              [this](LogLevel, std::string_view line) { lines_.emplace_back(line); }};
  CountingEvents events_;
  DbNames names_{"gfx90a_104", "gfx90a"};
  const std::string path_ = dir_ / "gfx90a_104.kdb";
};

TEST_F(MappedPackageTest, AHitLendsTheMappingAndKeepsItAlive) {
  const Entry a = entry_of("a", 20000, 'a');
  testing::write_file(path_, package_bytes(dir_, {a}));
  auto system = tier();
  auto first = get(*system, a);
  auto second = get(*system, a);
  ASSERT_TRUE(first && second);
  EXPECT_EQ(first->payload().data(), second->payload().data()) << "copied, not lent";
  system.reset();  // the tier and its package are gone; the view is not
  std::filesystem::remove(path_);
  EXPECT_EQ(binary(*first), std::string(20000, 'a'));
  EXPECT_TRUE(lines_.empty());
}

TEST_F(MappedPackageTest, APackageRewrittenInPlaceIsReadAgainNeverStale) {
  const Entry a = entry_of("a", 3000, 'a');
  const Entry b = entry_of("b", 5000, 'b');
  Entry a_changed = entry_of("a", 3000, 'A');
  testing::write_file(path_, package_bytes(dir_, {a}));
  auto system = tier();
  ASSERT_TRUE(get(*system, a));
  EXPECT_FALSE(get(*system, b));

  rewrite_in_place(path_, package_bytes(dir_, {a_changed, b}));
  auto now_a = get(*system, a);
  ASSERT_TRUE(now_a);
  EXPECT_EQ(binary(*now_a), std::string(3000, 'A'));
  auto now_b = get(*system, b);
  ASSERT_TRUE(now_b);
  EXPECT_EQ(binary(*now_b), std::string(5000, 'b'));
  EXPECT_EQ(warnings_with("changed while in use"), 1) << ::testing::PrintToString(lines_);
  EXPECT_EQ(events_.count, 0);
}

TEST_F(MappedPackageTest, APackageReplacedByRenameIsTakenUpAtItsNextHit) {
  const Entry a = entry_of("a", 3000, 'a');
  testing::write_file(path_, package_bytes(dir_, {a}));
  auto system = tier();
  auto old = get(*system, a);
  ASSERT_TRUE(old);
  testing::write_file(dir_ / "new.kdb", package_bytes(dir_, {entry_of("a", 3000, 'N')}));
  std::filesystem::rename(dir_ / "new.kdb", path_);
  auto again = get(*system, a);
  ASSERT_TRUE(again);
  EXPECT_EQ(binary(*again), std::string(3000, 'N'));
  EXPECT_EQ(binary(*old), std::string(3000, 'a'));  // what was lent: the old file, intact
  EXPECT_TRUE(lines_.empty()) << "a rename is how packages are installed";
}

TEST_F(MappedPackageTest, APackageTruncatedInPlaceNeverCrashesNorServesWhatIsLost) {
  const Entry a = entry_of("a", 40000, 'a');
  const Entry b = entry_of("b", 40000, 'b');
  const Entry c = entry_of("c", 40000, 'c');
  testing::write_file(path_, package_bytes(dir_, {a, b, c}));
  auto system = tier();
  auto held = get(*system, a);
  ASSERT_TRUE(held);
  ASSERT_TRUE(get(*system, b));  // checked, then served from the mapping unchecked

  ASSERT_EQ(::truncate(path_.c_str(), 4096), 0);
  // What was lent reads as zeros where the file was cut: no SIGBUS.
  const std::string lent = binary(*held);
  EXPECT_EQ(lent.size(), 40000u);
  EXPECT_EQ(lent.find_first_not_of(std::string("a\0", 2)), std::string::npos);
  EXPECT_NE(lent.find('\0'), std::string::npos);
  for (const Entry* e : {&a, &b, &c}) EXPECT_FALSE(get(*system, *e)) << e->material;
  EXPECT_EQ(warnings_with("changed while in use"), 1) << ::testing::PrintToString(lines_);
  EXPECT_GE(events_.count, 1);  // the truncated file, opened again
}

// Files whose stamp never changes: a truncation that fstat has not shown
// yet (it always does on Linux; this is the moment between).
class StampHidingEnv final : public EnvWrapper {
 public:
  StampHidingEnv() : EnvWrapper(Env::posix()) {}
  Result<std::unique_ptr<File>> open_random_access(const std::string& path) const override {
    auto file = EnvWrapper::open_random_access(path);
    if (!file) return file.status();
    return std::unique_ptr<File>(std::make_unique<Hiding>(std::move(*file)));
  }

 private:
  class Hiding final : public testing::FileWrapper {
   public:
    explicit Hiding(std::unique_ptr<File> file)
        : FileWrapper(std::move(file)), first_(*this->file().stamp()) {}
    Result<FileStamp> stamp() const override { return first_; }

   private:
    FileStamp first_;
  };
};

TEST_F(MappedPackageTest, AnEntrysFirstUseLooksNotAtTheFileALaterOneDoes) {
  // The first use checks the entry in full, which holds whatever the file
  // holds: no system call. A later use lends it unchecked, so it looks
  // first whether the file changed.
  const Entry a = entry_of("a", 3000, 'a');
  const Entry b = entry_of("b", 5000, 'b');
  testing::write_file(path_, package_bytes(dir_, {a, b}));
  testing::StampCountingEnv env;
  auto system = make_system_tier(dir_.path(), {}, env, log_, events_);
  ASSERT_TRUE(get(*system, a));  // opens the package (its stamps are taken then)
  const int after_open = env.stamps();
  ASSERT_TRUE(get(*system, b));
  EXPECT_EQ(env.stamps(), after_open) << "the first use of b looked at the file";
  ASSERT_TRUE(get(*system, a));
  ASSERT_TRUE(get(*system, b));
  EXPECT_EQ(env.stamps(), after_open + 2) << "a later use lent an entry without looking";
  EXPECT_TRUE(lines_.empty());
}

TEST_F(MappedPackageTest, AnEntryFirstUsedAfterItsPackageChangedInPlaceIsTheNewOne) {
  // c was never used before the package was rewritten in place with
  // another layout: where the old index puts c the file now holds other
  // bytes, which fail c's check; the package is opened anew and the new c
  // is served. Nothing is counted corrupt.
  const Entry a = entry_of("a", 3000, 'a');
  const Entry c = entry_of("c", 4000, 'c');
  testing::write_file(path_, package_bytes(dir_, {a, c}));
  auto system = tier();
  ASSERT_TRUE(get(*system, a));
  rewrite_in_place(path_, package_bytes(dir_, {entry_of("b", 9000, 'b'), entry_of("c", 4000, 'C'),
                                               entry_of("a", 7000, 'A')}));
  auto now_c = get(*system, c);
  ASSERT_TRUE(now_c);
  EXPECT_EQ(binary(*now_c), std::string(4000, 'C'));
  EXPECT_EQ(warnings_with("changed while in use"), 1) << ::testing::PrintToString(lines_);
  EXPECT_EQ(events_.count, 0);
}

TEST_F(MappedPackageTest, AnEntryLostWhileItIsFirstCheckedIsAMissNotACrash) {
  // The file is cut after the tier looked at its stamp, before the entry's
  // first check: the check reads lost pages (zeros, through the SIGBUS
  // guard), fails, and the package is opened anew: it is now cut, so
  // nothing is served from it.
  const Entry a = entry_of("a", 40000, 'a');
  const Entry b = entry_of("b", 40000, 'b');
  testing::write_file(path_, package_bytes(dir_, {a, b}));
  StampHidingEnv env;
  auto system = make_system_tier(dir_.path(), {}, env, log_, events_);
  ASSERT_TRUE(get(*system, a));
  ASSERT_EQ(::truncate(path_.c_str(), 45000), 0);  // b is lost
  EXPECT_FALSE(get(*system, b));
  EXPECT_EQ(warnings_with("changed while in use"), 1) << ::testing::PrintToString(lines_);
  EXPECT_FALSE(get(*system, a));
}

}  // namespace
}  // namespace kcache
