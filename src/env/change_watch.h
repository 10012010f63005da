// Tells a process that nothing it watches on disk has changed without
// looking at each file: the kernel's change notification (inotify), plus
// the mount table. A memo that would otherwise stat every file it depends
// on (inputs/scan_memo.h) asks `changes()` instead, and stats only when the
// count moved (docs/design.md §1.7, "Keying fast").
//
// A change to a watched thing raises the count before the syscall that
// made it returns, so a request that starts after an edit has finished
// sees it. What cannot be watched that way (a symbolic link or `..` on the
// path, a file system whose changes may come from another machine, a
// spent budget) is refused by `watch`, and the caller keeps stat-ing.
// Thread-safe; a forked child starts with a watch of its own.
#pragma once

#include <cstddef>
#include <cstdint>
#include <memory>
#include <optional>
#include <string>

namespace kcache {

class ChangeWatch {
 public:
  virtual ~ChangeWatch() = default;

  // How many changes to watched things were seen so far, after taking in
  // every notification pending now; it only grows. nullopt when
  // notifications may have been lost (an error): nothing can be trusted
  // to be unchanged then.
  virtual std::optional<std::uint64_t> changes() = 0;

  // Starts watching all that a lookup of `path` (relative to the working
  // folder unless absolute) depends on: the file, or that it is absent,
  // and each folder the lookup walks from `/`. True when every change to
  // it will raise the count; false when it cannot be watched so. Watches
  // stay for the life of the process (or until what they watch is
  // removed).
  virtual bool watch(const std::string& path) = 0;
};

// The process's watch; nullptr where inotify is unavailable.
ChangeWatch* process_change_watch();

// A watch of its own holding at most `budget` kernel watches, for tests
// (a forked child must not use it: it shares the parent's events).
std::unique_ptr<ChangeWatch> make_change_watch(std::size_t budget);

}  // namespace kcache
