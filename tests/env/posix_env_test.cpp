#include <gtest/gtest.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <filesystem>
#include <fstream>
#include <random>
#include <thread>

#include "env/env.h"
#include "fakes/temp_folder.h"

namespace kcache {
namespace {

using testing::TempFolder;

// Whether a temporary file of write_file_atomic lies in `folder`.
bool writing(const std::string& folder) {
  std::error_code error;
  for (const auto& e : std::filesystem::directory_iterator(folder, error)) {
    if (e.path().filename().string().find(".tmp.") != std::string::npos) return true;
  }
  return false;
}

// kill -9 in the middle of write_file_atomic never leaves a torn file: the
// path holds the old content or the whole new one. Large files make the
// write long enough (tens of ms) for the kill to land inside it.
TEST(PosixEnvTest, AtomicWriteSurvivesKillNine) {
  TempFolder dir;
  const std::string path = dir / "file";
  constexpr std::size_t kSize = 8u << 20;
  std::mt19937 random(7);
  int killed_mid_write = 0;
  for (int iteration = 0; iteration < 20; ++iteration) {
    pid_t pid = ::fork();
    ASSERT_GE(pid, 0);
    if (pid == 0) {
      std::vector<std::uint8_t> data(kSize);
      for (int round = 0;; ++round) {
        std::fill(data.begin(), data.end(), static_cast<std::uint8_t>('a' + round % 26));
        if (!Env::posix().write_file_atomic(path, data, /*sync=*/false).is_ok()) ::_exit(1);
      }
    }
    // The kill waits until the child is inside a write (its temporary file
    // exists), then comes up to 2 ms later: sometimes mid-write, sometimes
    // just after a rename. A kill at a random time alone once missed every
    // write in 20 tries on a loaded machine.
    const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(30);
    while (!writing(dir.path())) {
      ASSERT_LT(std::chrono::steady_clock::now(), deadline) << "the child never started a write";
      std::this_thread::yield();
    }
    const auto kill_at =
        std::chrono::steady_clock::now() + std::chrono::microseconds(random() % 2000);
    while (std::chrono::steady_clock::now() < kill_at) {
    }
    ::kill(pid, SIGKILL);
    ::waitpid(pid, nullptr, 0);
    // Leftover temporaries are the only trace of a kill inside a write.
    for (const auto& e : std::filesystem::directory_iterator(dir.path())) {
      if (e.path().filename() == "file") continue;
      ++killed_mid_write;
      std::filesystem::remove(e.path());
    }
    auto content = Env::posix().read_file(path);
    if (!content) continue;  // killed before the first rename
    ASSERT_EQ(content->size, kSize) << "iteration " << iteration << ": torn file";
    const std::uint8_t first = content->data[0];
    for (std::size_t i = 0; i < kSize; i += 4096) {
      ASSERT_EQ(content->data[i], first) << "iteration " << iteration << ": mixed content";
    }
  }
  EXPECT_GT(killed_mid_write, 0) << "no kill landed inside a write; the test proved nothing";
}

TEST(PosixEnvTest, LocksExcludeOtherHoldersAndFreeOnRelease) {
  TempFolder dir;
  auto first = Env::posix().try_lock(dir / "locks", 42, 0600);
  ASSERT_TRUE(first.is_ok());
  ASSERT_NE(*first, nullptr);
  auto second = Env::posix().try_lock(dir / "locks", 42, 0600);
  ASSERT_TRUE(second.is_ok());
  EXPECT_EQ(*second, nullptr);  // busy, even within one process
  auto other_byte = Env::posix().try_lock(dir / "locks", 43, 0600);
  EXPECT_NE(*other_byte, nullptr);
  first->reset();
  auto third = Env::posix().try_lock(dir / "locks", 42, 0600);
  EXPECT_NE(*third, nullptr);
}

TEST(PosixEnvTest, LockOfAKilledProcessIsFreedAtOnce) {
  TempFolder dir;
  int ready[2];
  ASSERT_EQ(::pipe(ready), 0);
  pid_t pid = ::fork();
  ASSERT_GE(pid, 0);
  if (pid == 0) {
    auto lock = Env::posix().try_lock(dir / "locks", 7, 0600);
    char byte = (lock.is_ok() && *lock) ? 'y' : 'n';
    (void)::write(ready[1], &byte, 1);
    ::pause();
    ::_exit(0);
  }
  char byte = 0;
  ASSERT_EQ(::read(ready[0], &byte, 1), 1);
  ASSERT_EQ(byte, 'y');
  EXPECT_EQ(*Env::posix().try_lock(dir / "locks", 7, 0600), nullptr);
  ::kill(pid, SIGKILL);
  ::waitpid(pid, nullptr, 0);
  EXPECT_NE(*Env::posix().try_lock(dir / "locks", 7, 0600), nullptr);
}

}  // namespace
}  // namespace kcache
