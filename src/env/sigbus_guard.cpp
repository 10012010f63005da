#include "env/sigbus_guard.h"

#include <signal.h>
#include <sys/mman.h>
#include <unistd.h>

#include <atomic>
#include <cerrno>
#include <cstdint>
#include <mutex>

namespace kcache::sigbus_guard {
namespace {

// Enough for every package a process opens (two per target); a range
// that finds no slot is copied from rather than lent.
constexpr int kSlots = 256;

// A range is [begin, end); end == 0 marks a free slot. `guard` writes
// begin before end and `release` clears end first, so the handler, which
// reads them with no lock, never sees a range that is not one.
struct Range {
  std::atomic<std::uintptr_t> begin{0};
  std::atomic<std::uintptr_t> end{0};
  std::atomic<bool> damaged{false};
  std::atomic<bool> writable{false};  // a page of zeros put there may be written
};
Range ranges[kSlots];
static_assert(std::atomic<std::uintptr_t>::is_always_lock_free);
static_assert(std::atomic<bool>::is_always_lock_free);

std::mutex slots_mutex;  // taken by guard and release, never by the handler
struct sigaction previous {};
std::uintptr_t page_size = 0;

// The handler that was there before: called as it asked to be, or, for
// the default action (and for an ignored fault, which would repeat
// forever), put back so that the fault, raised again, ends the process
// as it would have without kcache.
void pass_on(int signal, siginfo_t* info, void* context) {
  if ((previous.sa_flags & SA_SIGINFO) != 0 && previous.sa_sigaction != nullptr) {
    previous.sa_sigaction(signal, info, context);
    return;
  }
  if (previous.sa_handler == SIG_IGN && info->si_code <= 0) return;  // sent, not a fault
  if (previous.sa_handler != SIG_DFL && previous.sa_handler != SIG_IGN) {
    previous.sa_handler(signal);
    return;
  }
  struct sigaction fallback {};
  fallback.sa_handler = SIG_DFL;
  sigemptyset(&fallback.sa_mask);
  ::sigaction(signal, &fallback, nullptr);
  // A fault happens again when the handler returns; a sent signal does not.
  if (info->si_code <= 0) ::raise(signal);
}

void on_sigbus(int signal, siginfo_t* info, void* context) {
  const int saved_errno = errno;
  // si_code > 0: raised by the kernel for this access (BUS_ADRERR past the
  // end of the file), not sent by kill().
  if (info->si_code > 0) {
    const auto address = reinterpret_cast<std::uintptr_t>(info->si_addr);
    for (Range& range : ranges) {
      const std::uintptr_t end = range.end.load(std::memory_order_acquire);
      if (end == 0 || address >= end || address < range.begin.load(std::memory_order_acquire)) {
        continue;
      }
      void* page = reinterpret_cast<void*>(address & ~(page_size - 1));
      const int protection =
          range.writable.load(std::memory_order_acquire) ? PROT_READ | PROT_WRITE : PROT_READ;
      if (::mmap(page, page_size, protection, MAP_FIXED | MAP_PRIVATE | MAP_ANONYMOUS, -1, 0) !=
          MAP_FAILED) {
        range.damaged.store(true, std::memory_order_release);
        errno = saved_errno;
        return;
      }
      break;
    }
  }
  errno = saved_errno;
  pass_on(signal, info, context);
}

bool install() {
  page_size = static_cast<std::uintptr_t>(::sysconf(_SC_PAGESIZE));
  struct sigaction action {};
  action.sa_sigaction = on_sigbus;
  action.sa_flags = SA_SIGINFO | SA_ONSTACK;
  sigemptyset(&action.sa_mask);
  return ::sigaction(SIGBUS, &action, &previous) == 0;
}

}  // namespace

int guard(const void* begin, std::size_t size, bool writable) {
  static const bool installed = install();
  if (!installed || size == 0) return -1;
  std::lock_guard lock(slots_mutex);
  for (int slot = 0; slot < kSlots; ++slot) {
    Range& range = ranges[slot];
    if (range.end.load(std::memory_order_relaxed) != 0) continue;
    const auto first = reinterpret_cast<std::uintptr_t>(begin);
    range.damaged.store(false, std::memory_order_relaxed);
    range.writable.store(writable, std::memory_order_relaxed);
    range.begin.store(first, std::memory_order_release);
    range.end.store(first + size, std::memory_order_release);
    return slot;
  }
  return -1;
}

bool damaged(int slot) { return ranges[slot].damaged.load(std::memory_order_acquire); }

void release(int slot) {
  std::lock_guard lock(slots_mutex);
  ranges[slot].end.store(0, std::memory_order_release);
  ranges[slot].begin.store(0, std::memory_order_release);
}

}  // namespace kcache::sigbus_guard
