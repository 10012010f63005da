// The real Env under faults: atomic writes leave nothing half-written when
// a write really fails; errno mapping, lstat, the writability probe and the
// file system probe. (posix_env_test.cpp has kill -9 and locks.)
#include "env/env.h"

#include <gtest/gtest.h>

#include <sys/resource.h>
#include <sys/stat.h>
#include <unistd.h>

#include <csignal>
#include <filesystem>

#include "fakes/fault_env.h"
#include "fakes/temp_folder.h"

namespace kcache {
namespace {

using testing::names_in;
using testing::TempFolder;

std::span<const std::uint8_t> bytes_of(const std::string& text) {
  return {reinterpret_cast<const std::uint8_t*>(text.data()), text.size()};
}

TEST(PosixEnvFaultTest, AtomicWriteReplacesTheWholeFile) {
  TempFolder dir;
  Env& env = Env::posix();
  ASSERT_TRUE(env.write_file_atomic(dir / "f", bytes_of("first"), true).is_ok());
  ASSERT_TRUE(env.write_file_atomic(dir / "f", bytes_of("second"), false, 0640).is_ok());
  EXPECT_EQ(testing::read_file(dir / "f"), "second");
  EXPECT_EQ(names_in(dir.path()), std::vector<std::string>{"f"});
}

// A real failing write(2): the file-size limit makes the kernel refuse the
// bytes past it (EFBIG) halfway through. The temporary file goes, the old
// content stays.
TEST(PosixEnvFaultTest, WriteFailingHalfwayLeavesTheOldFileAndNoTemporary) {
  TempFolder dir;
  Env& env = Env::posix();
  ASSERT_TRUE(env.write_file_atomic(dir / "f", bytes_of("old"), true).is_ok());
  struct rlimit saved;
  ASSERT_EQ(::getrlimit(RLIMIT_FSIZE, &saved), 0);
  auto previous = std::signal(SIGXFSZ, SIG_IGN);
  struct rlimit small = saved;
  small.rlim_cur = 1000;
  ASSERT_EQ(::setrlimit(RLIMIT_FSIZE, &small), 0);
  Status s = env.write_file_atomic(dir / "f", bytes_of(std::string(5000, 'x')), true);
  ::setrlimit(RLIMIT_FSIZE, &saved);
  std::signal(SIGXFSZ, previous);
  ASSERT_FALSE(s.is_ok());
  EXPECT_EQ(s.code(), StatusCode::kIoError);
  EXPECT_NE(s.message().find("File too large"), std::string::npos) << s.message();
  EXPECT_EQ(testing::read_file(dir / "f"), "old");
  EXPECT_EQ(names_in(dir.path()), std::vector<std::string>{"f"});
}

// The same through FaultEnv's WritableFile faults: after a part was
// written, at fsync, at close, at rename.
TEST(PosixEnvFaultTest, InjectedWriteFaultsLeaveNoTemporary) {
  for (auto op : {testing::FaultOp::kWrite, testing::FaultOp::kSync, testing::FaultOp::kClose,
                  testing::FaultOp::kRename, testing::FaultOp::kCreate}) {
    TempFolder dir;
    testing::FaultEnv env;
    ASSERT_TRUE(env.write_file_atomic(dir / "f", bytes_of("old"), true, 0600).is_ok());
    env.inject(op, dir.path(), op == testing::FaultOp::kWrite ? ENOSPC : EIO, 10);
    EXPECT_FALSE(
        env.write_file_atomic(dir / "f", bytes_of(std::string(100, 'n')), true, 0600).is_ok());
    EXPECT_EQ(testing::read_file(dir / "f"), "old");
    EXPECT_EQ(names_in(dir.path()), std::vector<std::string>{"f"});
    EXPECT_EQ(env.faults_met(), 1);
  }
}

TEST(PosixEnvFaultTest, MissingAndBlockedPathsAreNotFound) {
  TempFolder dir;
  testing::write_file(dir / "file", "x");
  Env& env = Env::posix();
  EXPECT_EQ(env.read_file(dir / "none").status().code(), StatusCode::kNotFound);
  // A file where a folder belongs: nothing can be below it.
  EXPECT_EQ(env.read_file(dir / "file/below").status().code(), StatusCode::kNotFound);
  EXPECT_EQ(env.list_dir(dir / "file/below").status().code(), StatusCode::kNotFound);
  EXPECT_EQ(env.read_file(dir.path()).status().code(), StatusCode::kIoError);  // a folder
  EXPECT_FALSE(env.create_dirs(dir / "file/below", 0700).is_ok());
}

TEST(PosixEnvFaultTest, FileInfoIsLstat) {
  TempFolder dir;
  Env& env = Env::posix();
  testing::write_file(dir / "file", "12345");
  ::chmod((dir / "file").c_str(), 0640);
  std::filesystem::create_directory(dir / "folder");
  std::filesystem::create_directory_symlink(dir / "folder", dir / "link");
  auto file = env.file_info(dir / "file");
  ASSERT_TRUE(file.is_ok());
  EXPECT_EQ(file->type, FileType::kRegular);
  EXPECT_EQ(file->mode, 0640u);
  EXPECT_EQ(file->size, 5u);
  EXPECT_EQ(file->owner, ::getuid());
  EXPECT_GT(file->modified_unix, 0);
  EXPECT_EQ(env.file_info(dir / "folder")->type, FileType::kDirectory);
  EXPECT_EQ(env.file_info(dir / "link")->type, FileType::kSymlink);
  EXPECT_EQ(env.file_info(dir / "none").status().code(), StatusCode::kNotFound);
  EXPECT_EQ(env.user_id(), ::getuid());
}

TEST(PosixEnvFaultTest, CheckWritableLooksUpToTheFirstExistingFolder) {
  TempFolder dir;
  Env& env = Env::posix();
  EXPECT_TRUE(env.check_writable(dir.path()).is_ok());
  EXPECT_TRUE(env.check_writable(dir / "a/b/c").is_ok());  // could be created
  EXPECT_FALSE(std::filesystem::exists(dir / "a"));        // and was not
  testing::write_file(dir / "file", "x");
  Status blocked = env.check_writable(dir / "file/a/b");
  EXPECT_FALSE(blocked.is_ok());
  EXPECT_NE(blocked.message().find(dir / "file is not a directory"), std::string::npos)
      << blocked.message();
  if (::geteuid() != 0) {  // root may write anywhere
    std::filesystem::create_directory(dir / "ro");
    ::chmod((dir / "ro").c_str(), 0500);
    EXPECT_FALSE(env.check_writable(dir / "ro/x").is_ok());
    ::chmod((dir / "ro").c_str(), 0700);
  }
}

TEST(PosixEnvFaultTest, FileSystemOfLocalFoldersIsLocal) {
  TempFolder dir;
  Env& env = Env::posix();
  FileSystemInfo shm = env.file_system("/dev/shm/kcache-none/deeper");  // tmpfs, via a parent
  EXPECT_EQ(shm.kind, FileSystemKind::kLocal);
  EXPECT_TRUE(shm.name.empty());
  FileSystemInfo temp = env.file_system(dir / "not/yet");
  if (temp.kind != FileSystemKind::kLocal) GTEST_SKIP() << "the temp folder is on " << temp.name;
  EXPECT_EQ(env.file_system(dir.path()).kind, FileSystemKind::kLocal);
}

}  // namespace
}  // namespace kcache
