// The shelves of the system tier (shelf.h): a database's packages opened
// once per process, at its first lookup, and opened anew after one of
// their files changed. Their files are looked at again (a stat each) at
// most every `recheck`: a package installed where none was, a drop-in
// added, a file renamed over one that could not be used, are taken up.
// A package in use found changed by a lookup has its shelf opened anew at
// once (reopen).
#pragma once

#include <chrono>
#include <cstdint>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "base/log.h"
#include "base/mutex.h"
#include "base/thread_annotations.h"
#include "env/env.h"
#include "store/system/package_opener.h"
#include "store/system/shelf.h"
#include "store/tier.h"

namespace kcache {

class ShelfLoader {
 public:
  // The shelves of the system folder `folder`, each package opened by
  // `opener`.
  ShelfLoader(std::string folder, const PackageOpener& opener, const Env& env, const Logger& log,
              std::chrono::milliseconds recheck);

  // The shelves one lookup reads: its exact database's and, when that is
  // another, its arch-wide one's (else null).
  struct LookupShelves {
    std::shared_ptr<const Shelf> exact;
    std::shared_ptr<const Shelf> arch;
  };
  // Those of `db`, opened or looked at again as due at `now_ns` (the
  // coarse monotonic clock). One lock for both: this runs on every lookup.
  LookupShelves shelves_for(const DbNames& db, std::int64_t now_ns) EXCLUDES(mutex_);

  // `p`, a package of `db`, changed since it was opened: never lent from
  // again, and the database's packages opened anew by the next lookup. A
  // change in place is said once; a file renamed over it (an install)
  // is the way to do it, and is taken up quietly.
  void reopen(const std::string& db, const ShelvedPackage& p) EXCLUDES(mutex_);

 private:
  // What a path held when a shelf was opened: the file's identity, size
  // and modification time, or nothing there.
  struct FileStamp {
    std::string path;
    std::optional<FileInfo> seen;
    [[nodiscard]] bool same_as(const std::optional<FileInfo>& now) const;
  };
  // A shelf held for later lookups, with what its files were when it was
  // opened (<db>.kdb, the drop-in folder, each drop-in), looked at again
  // now and then (recheck_ns_).
  struct HeldShelf {
    std::shared_ptr<const Shelf> shelf;
    std::vector<FileStamp> stamps;
    std::int64_t checked_ns = 0;  // coarse monotonic clock
  };

  // The packages of `db`, opened once per process (again after one of
  // them changed).
  std::shared_ptr<const Shelf> shelf_locked(const std::string& db, std::int64_t now_ns)
      REQUIRES(mutex_);
  std::optional<FileInfo> file_info_or_none(const std::string& path) const;

  const std::int64_t recheck_ns_;  // how often a shelf's files are looked at again
  const std::string folder_;
  const PackageOpener& opener_;
  const Env& env_;
  const Logger& log_;
  Mutex mutex_;
  std::map<std::string, HeldShelf> shelves_ GUARDED_BY(mutex_);
};

}  // namespace kcache
