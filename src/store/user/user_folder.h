// The user tier's folder as every part of the tier sees it: the options,
// the Env and where to report, the names of a database's files, the modes
// they are made with, and the byte locks of <db>.locks. It holds no state
// that changes; the parts of the tier (user_tier.cpp) share one.
#pragma once

#include <sys/types.h>

#include <chrono>
#include <cstdint>
#include <memory>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "base/log.h"
#include "env/env.h"
#include "store/tier.h"
#include "store/user/quarantine.h"
#include "store/user/user_log.h"
#include "store/user/user_tier.h"

namespace kcache::userlog {

// The name the tier reports under (Tier::name).
inline constexpr std::string_view kTierName = "user";
inline constexpr std::string_view kLogSuffix = ".ukdb";
inline constexpr std::string_view kHintSuffix = ".ukdx";
inline constexpr std::string_view kLocksSuffix = ".locks";
// Byte 0 of <db>.locks guards appends to the log; keys lock odd bytes.
inline constexpr std::uint64_t kAppendLockOffset = 0;
// How long `kcache prune` waits for another process's pass.
inline constexpr auto kPruneWait = std::chrono::seconds(60);
// How long a write waits for other processes' appends (each one entry and
// its fdatasync) before it gives up storing.
inline constexpr auto kAppendWait = std::chrono::seconds(10);
// Damaged log bytes larger than this are not copied to quarantine/.
inline constexpr std::uint64_t kMaxQuarantineCopy = 64u << 20;
// A temporary file older than this was left by a killed writer.
inline constexpr std::int64_t kStaleTempSeconds = 3600;
// The lock file whose byte 0 one eviction pass at a time holds (no
// database name starts with a dot).
inline constexpr std::string_view kMaintenanceLock = ".maintenance";

class UserFolder {
 public:
  UserFolder(UserTierOptions tier_options, Env& tier_env, const Logger& logger,
             TierEvents& tier_events)
      : options(std::move(tier_options)),
        env(tier_env),
        log(logger),
        events(tier_events),
        quarantine(tier_env, options.dir) {}
  UserFolder(const UserFolder&) = delete;
  UserFolder& operator=(const UserFolder&) = delete;

  const UserTierOptions options;
  Env& env;
  const Logger& log;
  TierEvents& events;
  const Quarantine quarantine;

  std::string log_path(const std::string& name) const;
  std::string hint_path(const std::string& name) const;
  std::string use_path(const std::string& name) const;

  // The mode files and folders are made with (the umask applies).
  mode_t file_mode() const { return options.shared ? 0666 : 0600; }
  mode_t folder_mode() const { return options.shared ? 0777 : kFolderMode; }

  // The databases the folder holds files of (a log or a hint), by name;
  // none when the folder is missing.
  Result<std::vector<std::string>> list_databases() const;

  // The sizes of its log, hint and use table (0 for one that is missing).
  struct FileSizes {
    std::uint64_t log = 0, hint = 0, use = 0;
    [[nodiscard]] std::uint64_t total() const { return log + hint + use; }
  };
  FileSizes file_sizes(const std::string& name) const;

  // Whether `file`, just opened at `path`, is the regular file there and
  // not one a symbolic link leads to (another user's log, say): the tier
  // never follows a link in its folder. A link is a bad file (kCorruption:
  // moved aside); a file swapped between the open and the check is an
  // I/O error (a miss).
  Status opened_own_file(const std::string& path, const File& file) const;

  // Locks byte `offset` of <db>.locks. Something other than a plain file
  // where the lock file belongs (a folder, say) is moved aside like any bad
  // file, and the lock tried again, once. The content of a lock file is
  // never read, so garbage in it is harmless.
  Result<std::unique_ptr<FileLock>> lock_byte(const std::string& db, std::uint64_t offset) const;

  // The append lock of `name`, waited for up to `wait` (polling: the
  // holder is writing one entry).
  Result<std::unique_ptr<FileLock>> append_lock(const std::string& name,
                                                std::chrono::milliseconds wait) const;
  // Byte `offset` of <db>.locks, waited for up to `wait`; the timeout
  // says the holder has been `doing` so long.
  Result<std::unique_ptr<FileLock>> wait_for_lock(const std::string& db, std::uint64_t offset,
                                                  std::chrono::milliseconds wait,
                                                  const std::string& doing) const;
};

}  // namespace kcache::userlog
