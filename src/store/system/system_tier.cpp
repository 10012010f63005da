#include "store/system/system_tier.h"

#include <atomic>
#include <map>
#include <mutex>

#include "format/kdb_file.h"
#include "store/trusted_path.h"

namespace kcache {
namespace {

// Packages are read-only here: verify names the problem, --repair leaves it.
constexpr const char* kNotRepaired = " (a read-only package: reinstall or remove it)";
// Why a package is refused, in the words of its warning and of verify.
std::string untrusted_text(const std::string& reason) {
  return "not used: another user could have written it (" + reason +
         "); fix the owner or mode, or remove it";
}

class SystemTier final : public Tier {
 public:
  SystemTier(std::string folder, const Env& env, const Logger& log, TierEvents& events)
      : folder_(std::move(folder)), env_(env), log_(log), events_(events) {}

  std::string_view name() const override { return "system"; }

  Result<std::optional<Entry>> get(const DbNames& db, const CacheKey& key) override {
    const Package& exact_package = package(db.exact);
    const Package& arch_package = package(db.arch);
    const KdbReader* exact = exact_package.reader.get();
    const KdbReader* arch = db.arch != db.exact ? arch_package.reader.get() : nullptr;
    if (!exact_package.present && !arch_package.present) {
      // Said once per process and file; the flag spares every later miss
      // the message's strings and the logger's lock.
      if (!exact_package.missing_reported.exchange(true)) {
        log_.warn_once(
            "SystemDb:missing:" + folder_ + "/" + db.exact, "SystemDb",
            "Missing system database file: " + db.exact + ".kdb Performance may degrade");
      }
      return std::optional<Entry>();
    }
    for (const KdbReader* kdb : {exact, arch}) {
      if (kdb == nullptr) continue;
      auto slot = kdb->find(key);
      if (!slot) continue;
      auto bytes = kdb->read(*slot);
      if (!bytes) return bytes.status();
      auto entry = decode_entry(*bytes, &key);
      if (entry) return std::optional<Entry>(std::move(*entry));
      // A read-only package cannot be repaired here; the entry is skipped.
      events_.on_corrupt(name(), kdb->path() + "#" + key.hex(), entry.status());
    }
    return std::optional<Entry>();
  }

  Result<std::vector<std::string>> databases() const override {
    auto entries = env_.list_dir(folder_);
    if (!entries) {
      if (entries.status().code() == StatusCode::kNotFound) return std::vector<std::string>();
      return entries.status();
    }
    std::vector<std::string> names;
    for (const auto& e : *entries) {
      // A folder named *.kdb too: verify reports it.
      if (e.name.size() > 4 && e.name.ends_with(".kdb")) {
        names.push_back(e.name.substr(0, e.name.size() - 4));
      }
    }
    return names;
  }

  Status verify(bool /*repair*/, VerifyReport& report) override {
    auto names = databases();
    if (!names) return names.status();
    for (const auto& db : *names) {
      const std::string path = folder_ + "/" + db + ".kdb";
      ++report.databases_checked;
      if (auto reason = untrusted_reason(path, env_)) {
        report.problems.push_back({path, untrusted_text(*reason), false});
        continue;
      }
      auto kdb = KdbReader::open(path, env_);
      if (!kdb) {
        report.problems.push_back({path, kdb.status().message() + kNotRepaired, false});
        continue;
      }
      for (const auto& slot : (*kdb)->slots()) {
        ++report.entries_checked;
        auto bytes = (*kdb)->read(slot);
        Result<Entry> entry =
            bytes ? decode_entry(*bytes, &slot.key) : Result<Entry>(bytes.status());
        if (entry) {
          ++report.entries_ok;
        } else {
          report.problems.push_back(
              {path + "#" + slot.key.hex(), entry.status().message() + kNotRepaired, false});
        }
      }
    }
    return Status::ok();
  }

 private:
  struct Package {
    std::unique_ptr<KdbReader> reader;  // null when absent or unreadable
    bool present = false;               // the file exists, readable or not
    mutable std::atomic<bool> missing_reported{false};
  };

  // The package file for `db`, opened once per process.
  const Package& package(const std::string& db) {
    std::lock_guard lock(mutex_);
    auto it = packages_.find(db);
    if (it != packages_.end()) return it->second;
    const std::string path = folder_ + "/" + db + ".kdb";
    Package& kept = packages_[db];
    // Trusted as far as its file (ssh's StrictModes): a package another
    // user could write is refused, once, and the tier goes on without it.
    if (auto reason = untrusted_reason(path, env_)) {
      kept.present = true;  // refused, not missing: no second warning
      log_.warn_once("SystemDb:untrusted:" + path, "SystemDb",
                     "System database file " + path + " is " + untrusted_text(*reason));
      return kept;
    }
    auto opened = KdbReader::open(path, env_);
    kept.present = opened.is_ok() || opened.status().code() != StatusCode::kNotFound;
    // A package that cannot be used is treated as absent, with one warning
    // naming the file and the reason: a damaged one is counted as corrupt
    // (TierEvents says it), an unreadable one (a folder, EACCES, EIO) is
    // said here. A read-only package is never moved or repaired.
    if (opened) {
      kept.reader = std::move(*opened);
    } else if (opened.status().code() == StatusCode::kCorruption) {
      events_.on_corrupt(name(), path, opened.status());
    } else if (kept.present) {
      log_.warn_once("SystemDb:unreadable:" + path, "SystemDb",
                     "System database file " + path +
                         " is unreadable and is ignored: " + opened.status().message());
    }
    return kept;
  }

  const std::string folder_;
  const Env& env_;
  const Logger& log_;
  TierEvents& events_;
  std::mutex mutex_;
  std::map<std::string, Package> packages_;  // std::map: references stay valid
};

}  // namespace

std::unique_ptr<Tier> make_system_tier(std::string folder, const Env& env, const Logger& log,
                                       TierEvents& events) {
  return std::make_unique<SystemTier>(std::move(folder), env, log, events);
}

}  // namespace kcache
