// The tier interface. Each tier is a small class behind a factory; the
// lookup and promotion policy that strings them together is written once,
// at the top of src/core/cache.cpp.
//
// `get` has three outcomes: a verified entry (hit), nullopt (miss), or a
// Status (the tier failed: I/O error, unreachable). A bad entry is a miss:
// the tier reports it to TierEvents and moves it aside where it can.
// Optional abilities default to kNotSupported.
#pragma once

#include <kcache/admin.h>
#include <kcache/compiler.h>
#include <kcache/key.h>
#include <kcache/status.h>

#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "env/env.h"
#include "format/entry.h"

namespace kcache {

// The databases an entry for a target may live in, most specific first:
// "<arch>_<units>" then "<arch>" (equal when units are unknown).
struct DbNames {
  std::string exact;
  std::string arch;
  // The compiler the lookup is for, when known: the system tier passes over
  // a package packed for another (store/system/package_fit.h).
  const CompilerIdentity* compiler = nullptr;
  // No "Missing system database file" warning when no package holds
  // them: a client namespace's packages are the exception, not the rule.
  bool quiet_when_missing = false;
};

// Where tiers report what the cache should count and say.
class TierEvents {
 public:
  virtual ~TierEvents() = default;
  // A stored entry or file failed its checks. `where` names the file.
  virtual void on_corrupt(std::string_view tier, const std::string& where,
                          const Status& problem) = 0;
  // An eviction pass removed entries: `evicted` for size or count,
  // `expired` for age.
  virtual void on_evicted(std::string_view /*tier*/, std::uint64_t /*evicted*/,
                          std::uint64_t /*expired*/) {}
};

class Tier {
 public:
  virtual ~Tier() = default;
  [[nodiscard]] virtual std::string_view name() const = 0;

  virtual Result<std::optional<Entry>> get(const DbNames& db, const CacheKey& key) = 0;

  // Stores `entry`, whose encoded form is `encoded`, in database `db`.
  virtual Status put(const std::string& /*db*/, const Entry& /*entry*/,
                     std::span<const std::uint8_t> /*encoded*/) {
    return Status::not_supported(std::string(name()) + " tier is read-only");
  }
  // Ok when put() can store here now: a tier with folders makes them and
  // says why it cannot (a folder another user could write, no folder,
  // not writable). Only asked by a caller about to store many entries.
  virtual Status ready_to_store() {
    return Status::not_supported(std::string(name()) + " tier is read-only");
  }
  // Says that `key` was just used from another tier (a copy in memory), so
  // that a tier that orders eviction by use keeps it warm. Cheap; may
  // do nothing.
  virtual void note_use(const DbNames& /*db*/, const CacheKey& /*key*/) {}
  // Removes `key` from database `db`; removing what is absent is ok.
  virtual Status remove(const std::string& /*db*/, const CacheKey& /*key*/) {
    return Status::not_supported("cannot remove from the " + std::string(name()) + " tier");
  }
  // Locks `key` in database `db` against other processes for one compile
  // (docs/design.md §4): the lock, nullptr when another process holds it,
  // or a Status when this tier cannot lock.
  virtual Result<std::unique_ptr<FileLock>> try_lock(const std::string& /*db*/,
                                                     const CacheKey& /*key*/) {
    return Status::not_supported("the " + std::string(name()) + " tier has no locks");
  }
  // The database names this tier holds.
  [[nodiscard]] virtual Result<std::vector<std::string>> databases() const {
    return Status::not_supported("cannot list the " + std::string(name()) + " tier");
  }
  [[nodiscard]] virtual Result<std::vector<EntryInfo>> list(const std::string& /*db*/) const {
    return Status::not_supported("cannot list the " + std::string(name()) + " tier");
  }
  // Every verified entry of `db`, for export. Bad entries are skipped and
  // reported to TierEvents.
  [[nodiscard]] virtual Result<std::vector<Entry>> read_all(const std::string& /*db*/) const {
    return Status::not_supported("cannot read the " + std::string(name()) + " tier whole");
  }
  virtual Result<std::uint64_t> clear() {
    return Status::not_supported("cannot clear the " + std::string(name()) + " tier");
  }
  // Brings the tier within its limits (`options` in place of its own where
  // set): evicts, compacts, and says what it did.
  virtual Result<PruneReport> prune(const PruneOptions& /*options*/) {
    return Status::not_supported("cannot prune the " + std::string(name()) + " tier");
  }
  // What the tier holds now: entries, bytes on disk, databases.
  struct Usage {
    std::uint64_t entries = 0;
    std::uint64_t bytes = 0;
    std::uint64_t databases = 0;
  };
  [[nodiscard]] virtual Result<Usage> usage() const {
    return Status::not_supported("cannot measure the " + std::string(name()) + " tier");
  }
  // Checks every stored entry; appends what is wrong to `report`.
  virtual Status verify(bool /*repair*/, VerifyReport& /*report*/) {
    return Status::not_supported("cannot verify the " + std::string(name()) + " tier");
  }
};

// A readable summary of an entry's key material for `list`.
EntryInfo summarize_entry(const std::string& db, const Entry& entry, std::uint64_t stored_bytes);

}  // namespace kcache
