// kcache: the administration of a cache (what `kcache list/show/verify/
// prune/gc/export/import/clear/stats` do): CacheAdmin, and the types its
// methods take and report. The tiers speak these types too, so this
// header does not include the facade (cache.h).
#pragma once

#include <kcache/export.h>
#include <kcache/key.h>
#include <kcache/stats.h>
#include <kcache/status.h>

#include <chrono>
#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

namespace kcache {

// One entry of the user tier, as `kcache list` shows it.
struct KCACHE_EXPORT EntryInfo {
  std::string db;
  CacheKey key;
  std::string backend;
  std::string kernels;             // kernel names, comma-separated
  std::uint64_t bytes = 0;         // binary size
  std::uint64_t stored_bytes = 0;  // entry size on disk
  std::int64_t created_unix = 0;
  std::string target;                // the architecture it was compiled for
  bool failure = false;              // a remembered compile error, not a binary
  std::int64_t last_used_unix = 0;   // the minute it was last used; 0: unknown
  std::uint64_t compile_micros = 0;  // what compiling it took; 0: unknown
  // A client-keyed entry's namespace and key (kcache/client.h); empty for
  // a kernel. Its backend reads "client".
  std::string client_namespace{};
  std::string client_key{};
};

// One entry whole, as `kcache show` and `kcache extract` read it.
struct KCACHE_EXPORT StoredEntry {
  EntryInfo info{};
  std::string material{};  // the key material, one field a line
  std::vector<std::pair<std::string, std::string>> metadata{};
  std::vector<std::uint8_t> binary{};  // the compiler's log, for a failure
};

// What `verify` found.
struct KCACHE_EXPORT VerifyReport {
  struct Problem {
    std::string path;     // the file
    std::string problem;  // what is wrong with it
    bool repaired = false;
  };
  std::uint64_t entries_checked = 0;
  std::uint64_t entries_ok = 0;
  std::uint64_t databases_checked = 0;
  std::vector<Problem> problems;
  // Why what was found cannot be repaired here (the user cache is
  // read-only to this process); empty when `verify --repair` can.
  std::string cannot_repair{};
};

// Limits for one `prune`, in place of the configured ones where set
// (KCACHE_MAX_SIZE, KCACHE_MAX_ENTRIES, KCACHE_MAX_AGE); 0: no limit.
struct KCACHE_EXPORT PruneOptions {
  std::optional<std::uint64_t> max_size{};
  std::optional<std::uint64_t> max_entries{};
  std::optional<std::chrono::seconds> max_age{};
};

// What `prune` did to the user tier.
struct KCACHE_EXPORT PruneReport {
  // False when another process was pruning the cache (nothing was done).
  bool ran = true;
  // The limits applied; 0: none.
  std::uint64_t max_size = 0;
  std::uint64_t max_entries = 0;
  std::int64_t max_age_seconds = 0;
  std::uint64_t bytes_before = 0;  // of the cache's files
  std::uint64_t entries_before = 0;
  std::uint64_t bytes_after = 0;
  std::uint64_t entries_after = 0;
  std::uint64_t evicted = 0;  // least recently used, for size or count
  std::uint64_t expired = 0;  // unused for longer than max_age
  std::uint64_t databases_compacted = 0;
};

// What `gc` removes: other kcache versions' folders beside this one,
// the entries of compilers none of whose entries was used for a while (a
// driver or toolkit since upgraded), and old quarantined files.
struct KCACHE_EXPORT GcOptions {
  bool dry_run = true;  // say what would go, remove nothing
  std::chrono::seconds unused_for{30 * 86400};
};

struct KCACHE_EXPORT GcReport {
  struct Item {
    std::string what;  // "kcache 0.3.0", "command test-cp (id:test-cp)", "quarantine"
    std::string path;  // the folder or file; the database for a compiler's entries
    std::uint64_t bytes = 0;
    std::uint64_t entries = 0;
    std::int64_t last_used_unix = 0;  // a compiler's newest use
  };
  bool removed = false;  // false: a dry run
  std::vector<Item> version_folders;
  std::vector<Item> compilers;
  std::vector<Item> quarantined;
  // Folders named like versions that were left alone, and why.
  std::vector<Item> kept;
  std::uint64_t bytes = 0;  // in all (freed, or that would be)
};

// What Cache::export_db writes.
struct KCACHE_EXPORT ExportOptions {
  // The private key to sign the package with (package.h); empty: unsigned.
  std::string signing_key{};
  // Only the entries of these keys (those the database lacks are left
  // out); every entry when unset.
  std::optional<std::vector<CacheKey>> keys{};
};

// How CacheAdmin::verify checks.
struct KCACHE_EXPORT VerifyOptions {
  // Move bad entries to quarantine, restore missing index rows, and remove
  // the scratch folders of killed compiles; otherwise only report.
  bool repair = false;
};

class Cache;

// The administration of one cache: a view of it, which must not outlive
// it; any number may be made, from any thread. Each method fails with
// kUnavailable when the cache is disabled or has no user tier (HOME unset).
class KCACHE_EXPORT CacheAdmin {
 public:
  explicit CacheAdmin(Cache& cache);

  // Every entry of every database of this version.
  [[nodiscard]] Result<std::vector<EntryInfo>> list() const;
  // The entry of `key` in database `db` of the user tier, whole; nullopt
  // when it has none. Reading it counts as a use (for eviction).
  [[nodiscard]] Result<std::optional<StoredEntry>> read_entry(std::string_view db,
                                                              const CacheKey& key) const;
  // Every entry of database `db`, without their binaries unless asked;
  // reading them is no use (for eviction).
  [[nodiscard]] Result<std::vector<StoredEntry>> read_entries(std::string_view db,
                                                              bool with_binaries = false) const;
  // Removes every entry of this version; returns how many were removed.
  Result<std::uint64_t> clear();
  // Forgets every remembered compile error (they are retried); returns how
  // many there were.
  Result<std::uint64_t> clear_failures();
  // Checks every user entry and every .kdb in the system folder.
  Result<VerifyReport> verify(const VerifyOptions& options = {});
  // Brings the user tier within its limits now (what a background pass
  // does after a put takes the cache past one): evicts the entries used
  // longest ago and compacts what they leave.
  Result<PruneReport> prune(const PruneOptions& options = {});
  // Removes what no one will use again (GcOptions), or with dry_run only
  // says what that is.
  Result<GcReport> gc(const GcOptions& options = {});
  // Writes the entries of database `db` to a new .kdb file at `output_path`
  // (replaced atomically); returns the number of entries written.
  Result<std::uint64_t> export_db(std::string_view db, const std::string& output_path,
                                  const ExportOptions& options = {}) const;
  // Copies every entry of the package at `path` into the user tier, in the
  // database its metadata names; returns how many (one the user tier holds
  // already is not stored again, nor counted). An entry that fails
  // its checks is skipped, counted in `left_out` when given (kCorruption
  // when none is left). A package whose signature does not hold, or, with
  // trusted keys configured, one they do not sign, is refused whole
  // (kCorruption), as the system tier refuses it.
  Result<std::uint64_t> import_package(const std::string& path, std::uint64_t* left_out = nullptr);
  // Every process's counts, for this cache folder, and what it holds.
  [[nodiscard]] Result<FolderStats> folder_stats() const;
  // Sets every process's counts for this folder to zero.
  Status zero_stats();
  // Ok when compiled kernels can be kept in the user cache: makes its
  // folder when missing, else says why not (the cache is disabled, no
  // user cache, a folder another user could write, not a writable folder).
  // A request never needs it (a cache problem never fails one); for a tool
  // about to compile many kernels to keep (kcache pack).
  Status check_storable();

 private:
  Cache& cache_;
};

}  // namespace kcache
