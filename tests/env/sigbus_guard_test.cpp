// What the SIGBUS handler does with a signal that is not for a guarded
// range: each case runs in a fresh process (the handler is installed once
// per process, after the handler the case sets up).
#include "env/sigbus_guard.h"

#include <fcntl.h>
#include <gtest/gtest.h>
#include <signal.h>
#include <sys/mman.h>
#include <unistd.h>

#include <cstdlib>
#include <string>

#include "fakes/temp_folder.h"

namespace kcache {
namespace {

using testing::TempFolder;

const std::size_t kPage = static_cast<std::size_t>(::sysconf(_SC_PAGESIZE));

// A page of a file that is then cut to nothing: reading it faults.
const volatile std::uint8_t* lost_page(const std::string& path) {
  testing::write_file(path, std::string(kPage, 'x'));
  const int fd = ::open(path.c_str(), O_RDONLY);
  void* data = ::mmap(nullptr, kPage, PROT_READ, MAP_SHARED, fd, 0);
  ::close(fd);
  if (data == MAP_FAILED || ::truncate(path.c_str(), 0) != 0) std::abort();
  return static_cast<const volatile std::uint8_t*>(data);
}

void exit_42(int /*signal*/, siginfo_t* /*info*/, void* /*context*/) { ::_exit(42); }
void exit_43(int /*signal*/) { ::_exit(43); }

// The handler a program had before kcache's: SA_SIGINFO, exits with 42.
void handle_sigbus_with_exit_42() {
  struct sigaction before {};
  before.sa_sigaction = exit_42;
  before.sa_flags = SA_SIGINFO;
  ::sigaction(SIGBUS, &before, nullptr);
}

class SigbusGuardTest : public ::testing::Test {
 protected:
  void SetUp() override { GTEST_FLAG_SET(death_test_style, "threadsafe"); }
  TempFolder dir_;
};

TEST_F(SigbusGuardTest, AFaultOutsideTheGuardedRangesGoesToTheHandlerBefore) {
  EXPECT_EXIT(
      {
        handle_sigbus_with_exit_42();
        testing::write_file(dir_ / "guarded", std::string(kPage, 'g'));
        const int slot = sigbus_guard::guard(&dir_, sizeof dir_);  // any range
        if (slot < 0) std::_Exit(1);
        (void)lost_page(dir_ / "lost")[0];
        std::_Exit(0);
      },
      ::testing::ExitedWithCode(42), "");
}

TEST_F(SigbusGuardTest, ASentSigbusGoesToAPlainHandlerBefore) {
  EXPECT_EXIT(
      {
        ::signal(SIGBUS, exit_43);
        if (sigbus_guard::guard(&dir_, sizeof dir_) < 0) std::_Exit(1);
        ::raise(SIGBUS);
        std::_Exit(0);
      },
      ::testing::ExitedWithCode(43), "");
}

TEST_F(SigbusGuardTest, WithoutAHandlerBeforeAnUnguardedFaultKillsAsItWould) {
  EXPECT_EXIT(
      {
        struct sigaction fallback {};
        fallback.sa_handler = SIG_DFL;
        ::sigaction(SIGBUS, &fallback, nullptr);
        if (sigbus_guard::guard(&dir_, sizeof dir_) < 0) std::_Exit(1);
        (void)lost_page(dir_ / "lost")[0];
        std::_Exit(0);
      },
      ::testing::KilledBySignal(SIGBUS), "");
}

TEST_F(SigbusGuardTest, AReleasedRangeIsNoLongerGuarded) {
  EXPECT_EXIT(
      {
        handle_sigbus_with_exit_42();
        const volatile std::uint8_t* page = lost_page(dir_ / "lost");
        const int slot = sigbus_guard::guard(const_cast<const std::uint8_t*>(page), kPage);
        if (slot < 0) std::_Exit(1);
        if (page[0] != 0 || !sigbus_guard::damaged(slot)) std::_Exit(2);
        sigbus_guard::release(slot);
        (void)lost_page(dir_ / "lost2")[0];
        std::_Exit(0);
      },
      ::testing::ExitedWithCode(42), "");
}

}  // namespace
}  // namespace kcache
