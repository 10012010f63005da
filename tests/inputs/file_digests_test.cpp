#include "inputs/file_digests.h"

#include <fcntl.h>
#include <gtest/gtest.h>
#include <sys/stat.h>

#include "base/hash.h"
#include "fakes/temp_folder.h"

namespace kcache {
namespace {

using testing::TempFolder;
using testing::write_file;

// Sets the file's mtime an hour back: old enough for its stamp to tell the
// next edit. (ctime moves with it to now; it is set by the kernel only.)
void age(const std::string& path) {
  struct timespec times[2];
  times[0].tv_sec = times[1].tv_sec = ::time(nullptr) - 3600;
  times[0].tv_nsec = times[1].tv_nsec = 0;
  ASSERT_EQ(::utimensat(AT_FDCWD, path.c_str(), times, 0), 0);
}

TEST(FileDigestsTest, ReusesADigestWhileTheStampHolds) {
  TempFolder dir;
  const std::string path = dir / "a.h";
  write_file(path, "#include \"b.h\"\n");
  const Env& env = Env::posix();
  FileDigests digests;
  auto stamp = env.stamp(path);
  ASSERT_TRUE(stamp.is_ok());
  auto first = digests.get(path, *stamp, env);
  ASSERT_TRUE(first.is_ok());
  EXPECT_EQ(first->digest, sha256_field("#include \"b.h\"\n"));
  ASSERT_EQ(first->directives->includes.size(), 1u);
  EXPECT_EQ(first->directives->includes[0].name, "b.h");
  // Just written: its ctime is recent, so it is read again every time.
  EXPECT_EQ(digests.get(path, *stamp, env)->digest, first->digest);
  EXPECT_EQ(digests.reads(), 2u);

  // A stamp from long ago is trusted: no read.
  FileStamp old = *stamp;
  old.modified_ns = old.changed_ns = 1'000'000'000LL;  // 1970
  ASSERT_TRUE(digests.get(path, old, env).is_ok());
  ASSERT_TRUE(digests.get(path, old, env).is_ok());
  EXPECT_EQ(digests.reads(), 3u);
  // Any change of the stamp reads the file again.
  FileStamp grown = old;
  grown.size += 1;
  ASSERT_TRUE(digests.get(path, grown, env).is_ok());
  EXPECT_EQ(digests.reads(), 4u);
}

TEST(FileDigestsTest, AnEditedFileIsReadAgain) {
  TempFolder dir;
  const std::string path = dir / "h.h";
  write_file(path, "one");
  age(path);
  const Env& env = Env::posix();
  FileDigests digests;
  auto before = digests.get(path, *env.stamp(path), env);
  ASSERT_TRUE(before.is_ok());
  write_file(path, "two");  // same size, new mtime and ctime
  auto after = digests.get(path, *env.stamp(path), env);
  ASSERT_TRUE(after.is_ok());
  EXPECT_NE(before->digest, after->digest);
  EXPECT_EQ(after->digest, sha256_field("two"));
}

TEST(FileDigestsTest, RecentChangesAreNotTrusted) {
  FileStamp stamp;
  stamp.modified_ns = stamp.changed_ns = 0;
  EXPECT_FALSE(changed_recently(stamp));
  const std::int64_t now = wall_clock_ns();
  stamp.changed_ns = now;
  EXPECT_TRUE(changed_recently(stamp));
  stamp.changed_ns = now + 3'600'000'000'000LL;  // a clock ahead of ours
  EXPECT_TRUE(changed_recently(stamp));
  // Nanosecond stamps: one clock tick (20 ms) tells edits apart.
  stamp.changed_ns = now - 50'000'000 + 1;
  EXPECT_FALSE(changed_recently(stamp));
  EXPECT_TRUE(changed_recently(stamp, stamp.changed_ns + 1'000'000));
  // Whole-second stamps (a file system without finer ones): two seconds.
  stamp.modified_ns = stamp.changed_ns = (now / 1'000'000'000 - 1) * 1'000'000'000;
  EXPECT_TRUE(changed_recently(stamp));
  stamp.modified_ns = stamp.changed_ns = (now / 1'000'000'000 - 3) * 1'000'000'000;
  EXPECT_FALSE(changed_recently(stamp));
}

}  // namespace
}  // namespace kcache
