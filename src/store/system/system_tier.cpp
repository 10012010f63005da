#include "store/system/system_tier.h"

#include <atomic>
#include <map>
#include <mutex>

#include "format/kdb_file.h"
#include "store/system/package_fit.h"
#include "store/system/trusted_keys.h"
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
std::string unsigned_text(const std::string& refusal) {
  return "not used: " + refusal + " (KCACHE_TRUSTED_KEYS)";
}

class SystemTier final : public Tier {
 public:
  SystemTier(std::string folder, std::vector<std::string> trusted_keys, const Env& env,
             const Logger& log, TierEvents& events)
      : folder_(std::move(folder)),
        trusted_key_paths_(std::move(trusted_keys)),
        env_(env),
        log_(log),
        events_(events) {}

  std::string_view name() const override { return "system"; }

  Result<std::optional<Entry>> get(const DbNames& db, const CacheKey& key) override {
    // A second round only after a package was found changed since it was
    // opened, and opened anew.
    for (int round = 0; round < 2; ++round) {
      std::shared_ptr<const Package> exact_package;
      std::shared_ptr<const Package> arch_package;
      {
        std::lock_guard lock(mutex_);  // once for both: this runs on every lookup
        exact_package = package_locked(db.exact);
        arch_package = db.arch != db.exact ? package_locked(db.arch) : exact_package;
      }
      if (!exact_package->present && !arch_package->present) {
        // Said once per process and file; the flag spares every later miss
        // the message's strings and the logger's lock.
        if (!exact_package->missing_reported.exchange(true)) {
          log_.warn_once(
              "SystemDb:missing:" + folder_ + "/" + db.exact, "SystemDb",
              "Missing system database file: " + db.exact + ".kdb Performance may degrade");
        }
        return std::optional<Entry>();
      }
      bool reopened = false;
      for (const Package* p :
           {exact_package.get(), db.arch != db.exact ? arch_package.get() : nullptr}) {
        const KdbReader* kdb = p != nullptr ? p->reader.get() : nullptr;
        const std::string& name = p == exact_package.get() ? db.exact : db.arch;
        if (kdb == nullptr || p->altered.load(std::memory_order_acquire) ||
            !serves(*p, name, db.compiler)) {
          continue;
        }
        auto slot = kdb->find(key);
        if (!slot) continue;
        auto got = entry_in(*p, *slot, key);
        if (!got) return got.status();
        if (got->entry) return std::move(got->entry);
        if (got->changed) {
          reopen(name, *p);
          reopened = true;
          break;
        }
      }
      if (!reopened) break;
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
    const TrustedKeys& keys = trusted_keys();
    for (const auto& db : *names) {
      const std::string path = folder_ + "/" + db + ".kdb";
      ++report.databases_checked;
      const auto owner_problem = untrusted_reason(path, env_);
      if (owner_problem && !keys.configured()) {
        report.problems.push_back({path, untrusted_text(*owner_problem), false});
        continue;
      }
      auto kdb = KdbReader::open(path, env_);
      if (!kdb) {
        report.problems.push_back({path, kdb.status().message() + kNotRepaired, false});
        continue;
      }
      // A signature is checked whether or not keys are trusted: an altered
      // signed package is a problem either way.
      auto refusal = keys.configured() ? keys.refusal(**kdb) : signature_problem(**kdb);
      if (refusal) {
        report.problems.push_back({path, unsigned_text(*refusal), false});
        continue;
      }
      // Another key or entry format, or another database's kernels (a
      // renamed file): never used here, whatever the compiler.
      if (auto unfit = unfit_reason((*kdb)->metadata(), db, CompilerIdentity{})) {
        report.problems.push_back({path, "not used: " + *unfit, false});
        continue;
      }
      for (const auto& slot : (*kdb)->slots()) {
        ++report.entries_checked;
        auto bytes = (*kdb)->read(slot);
        Result<Entry> entry =
            bytes ? decode_package_entry(**kdb, slot, *bytes) : Result<Entry>(bytes.status());
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
    std::unique_ptr<KdbReader> reader;  // null when absent, unreadable or refused
    bool present = false;               // the file exists, readable or not
    mutable std::atomic<bool> missing_reported{false};
    // A package accepted for its signature (KCACHE_TRUSTED_KEYS): each
    // entry's bytes are compared with the SHA-256 it was signed with:
    // once per entry and process when only root or this user can change
    // the file, on every read when others can (the signature is then all
    // that vouches for it, and entries are copied out, never lent).
    bool check_digests = false;
    bool check_every_read = false;
    // An entry of it was found not as signed: a package altered after it
    // was signed is refused whole, as one whose signature fails is, for
    // the rest of the process (entries served before were each as signed).
    mutable std::atomic<bool> altered{false};
    // Per slot: its bytes passed every check once in this process. A
    // mapped entry is not checked again; a copied one is checksummed on
    // every read, and its digest compared once.
    std::unique_ptr<std::atomic<bool>[]> checked;

    // Whether it serves each compiler asked for (package_fit.h): a few
    // identities, most recent first.
    mutable std::mutex fit_mutex;
    mutable std::vector<std::pair<CompilerIdentity, bool>> fits;
  };

  // What entry_in found: the entry, nothing (a bad entry, reported), or a
  // package that changed since it was opened and must be opened anew.
  struct Found {
    std::optional<Entry> entry;
    bool changed = false;
  };

  // The entry in `slot` of `p` for `key`, verified (docs/design.md §3): a
  // view of the mapping when mapped, lent unchecked only while the file is
  // as it was opened; otherwise a copy. An entry's first use needs no look
  // at the file: its full check holds whatever the file now holds there
  // (a changed file fails it, or holds a whole entry of this key).
  Result<Found> entry_in(const Package& p, const KdbSlot& slot, const CacheKey& key) const {
    const KdbReader& kdb = *p.reader;
    std::atomic<bool>& checked = p.checked[slot.ordinal];
    const bool first = !checked.load(std::memory_order_acquire);
    if (kdb.mapped() && !first) {
      auto unchanged = kdb.unchanged();
      if (!unchanged) return unchanged.status();
      if (!*unchanged) return Found{std::nullopt, true};
    }
    auto bytes = kdb.view(slot);
    if (!bytes) return bytes.status();
    if (p.check_digests && (first || p.check_every_read) &&
        !matches_signed_digest(kdb, slot, bytes->span())) {
      auto unchanged = kdb.unchanged();
      if (unchanged && !*unchanged) return Found{std::nullopt, true};  // replaced: opened anew
      // One report for the package, not one per entry.
      if (!p.altered.exchange(true)) {
        events_.on_corrupt(name(), kdb.path(),
                           Status::corruption("entry " + key.hex() +
                                              " is not the one it was signed with: the package "
                                              "was altered after it was signed"));
      }
      return Found{};
    }
    const EntryCheck check =
        kdb.mapped() && !first ? EntryCheck::kChecksumPassed : EntryCheck::kFull;
    auto entry = decode_entry(*bytes, &key, check);
    if (!entry) return bad_entry(p, kdb.path() + "#" + key.hex(), entry.status());
    if (first) checked.store(true, std::memory_order_release);
    return Found{std::move(*entry), false};
  }

  // A bad entry in `p`: reported and skipped (a read-only package cannot
  // be repaired here), unless a page of the mapping was lost while it was
  // read (a truncation: the package is opened anew instead).
  Result<Found> bad_entry(const Package& p, const std::string& where, const Status& problem) const {
    auto unchanged = p.reader->unchanged();
    if (unchanged && !*unchanged) return Found{std::nullopt, true};
    events_.on_corrupt(name(), where, problem);
    return Found{};
  }

  // `p`, the package of `db`, changed since it was opened: never lent from
  // again, and the file at its path opened anew by the next lookup. A
  // change in place is said once; a file renamed over it (an install)
  // is the way to do it, and is taken up quietly.
  void reopen(const std::string& db, const Package& p) {
    const std::string& path = p.reader->path();
    auto now = env_.file_info(path);
    if (now && now->id == p.reader->file_id()) {
      log_.warn_once("SystemDb:changed:" + path, "SystemDb",
                     "System database file " + path +
                         " changed while in use (install packages by renaming a whole file "
                         "over the old one, as kcache install does); it is read again");
    } else {
      log_.debug("SystemDb", path + " was replaced; the new file is opened");
    }
    std::lock_guard lock(mutex_);
    auto it = packages_.find(db);
    if (it != packages_.end() && it->second.get() == &p) packages_.erase(it);
  }

  // Whether `p` (found as `db`) can serve `compiler` at all: decided once
  // per compiler and said once when it cannot, rather than a silent miss
  // on every request (the keys would not match anyway).
  bool serves(const Package& p, const std::string& db, const CompilerIdentity* compiler) const {
    if (compiler == nullptr) return true;
    constexpr std::size_t kRemembered = 4;
    std::lock_guard lock(p.fit_mutex);
    for (const auto& [identity, fits] : p.fits) {
      if (identity.version == compiler->version && identity.id == compiler->id &&
          identity.backend == compiler->backend) {
        return fits;
      }
    }
    auto reason = unfit_reason(p.reader->metadata(), db, *compiler);
    if (p.fits.size() == kRemembered) p.fits.pop_back();
    p.fits.insert(p.fits.begin(), {*compiler, !reason.has_value()});
    if (reason) {
      log_.warn_once("SystemDb:unfit:" + p.reader->path() + ":" + identity_text(*compiler),
                     "SystemDb",
                     "System database file " + p.reader->path() +
                         " is not used for this compiler: " + *reason);
    }
    return !reason.has_value();
  }

  // Why another user could have written the package `kdb` has open at
  // `path`: the rule applied to the file now at `path`, which must be the
  // one opened.
  std::optional<std::string> owner_problem_of_opened(const std::string& path,
                                                     const KdbReader& kdb) const {
    if (auto reason = untrusted_reason(path, env_)) return reason;
    auto now = env_.file_info(path);
    if (!now || !(now->id == kdb.file_id())) return "it was replaced while it was opened";
    return std::nullopt;
  }

  // The keys packages must be signed with, read on first use; each key
  // file that cannot be used is said once.
  const TrustedKeys& trusted_keys() const {
    std::call_once(keys_loaded_, [this] {
      keys_ = TrustedKeys::load(trusted_key_paths_, env_);
      for (const auto& problem : keys_.problems()) {
        log_.warn_once("SystemDb:key:" + problem, "SystemDb", problem);
      }
    });
    return keys_;
  }

  // The package file for `db`, opened once per process (again after it
  // changed in place), mutex_ held. Held by each lookup that uses it: one
  // that is opened anew does not free it under another thread.
  std::shared_ptr<const Package> package_locked(const std::string& db) {
    auto it = packages_.find(db);
    if (it != packages_.end()) return it->second;
    const std::string path = folder_ + "/" + db + ".kdb";
    auto made = std::make_shared<Package>();
    packages_[db] = made;
    Package& kept = *made;
    const TrustedKeys& keys = trusted_keys();
    // Trusted as far as its file (ssh's StrictModes) unless keys are
    // configured: a package another user could write is refused, once, and
    // the tier goes on without it. With keys, its signature decides.
    const auto owner_problem = untrusted_reason(path, env_);
    if (owner_problem && !keys.configured()) {
      kept.present = true;  // refused, not missing: no second warning
      log_.warn_once("SystemDb:untrusted:" + path, "SystemDb",
                     "System database file " + path + " is " + untrusted_text(*owner_problem));
      return made;
    }
    auto opened = KdbReader::open(path, env_);
    // Checked again on the file opened: one put in place between the first
    // check and the open (the file was absent then, say) is held to the
    // rule as well.
    const auto opened_problem = opened ? owner_problem_of_opened(path, **opened) : owner_problem;
    if (opened && opened_problem && !keys.configured()) {
      kept.present = true;
      log_.warn_once("SystemDb:untrusted:" + path, "SystemDb",
                     "System database file " + path + " is " + untrusted_text(*opened_problem));
      return made;
    }
    // Without keys, a package that says it is signed is still held to its
    // signature (once, at open): one altered after signing is refused, not
    // served as if unsigned (one that cannot be checked here, without
    // libsodium, is served as before). Entries' digests are checked under
    // keys.
    if (opened && !keys.configured()) {
      if (auto broken = signature_failure(**opened); broken && broken->checked) {
        kept.present = true;
        log_.warn_once("SystemDb:unsigned:" + path, "SystemDb",
                       "System database file " + path + " is not used: " + broken->why);
        return made;
      }
    }
    if (opened && keys.configured()) {
      if (auto refusal = keys.refusal(**opened)) {
        kept.present = true;
        log_.warn_once("SystemDb:unsigned:" + path, "SystemDb",
                       "System database file " + path + " is " + unsigned_text(*refusal));
        return made;
      }
      kept.check_digests = true;
      kept.check_every_read = opened_problem.has_value();
    }
    kept.present = opened.is_ok() || opened.status().code() != StatusCode::kNotFound;
    // A package that cannot be used is treated as absent, with one warning
    // naming the file and the reason: a damaged one is counted as corrupt
    // (TierEvents says it), an unreadable one (a folder, EACCES, EIO) is
    // said here. A read-only package is never moved or repaired.
    if (opened) {
      kept.checked = std::make_unique<std::atomic<bool>[]>((*opened)->slots().size());
      // Lent from a mapping unless others can write the file or another
      // machine can (a network or FUSE file system): then copied out.
      if (!kept.check_every_read && env_.file_system(path).kind == FileSystemKind::kLocal) {
        if (Status mapped = (*opened)->map(); !mapped.is_ok()) {
          log_.debug("SystemDb", mapped.message() + "; its entries are read instead");
        }
      }
      kept.reader = std::move(*opened);
    } else if (opened.status().code() == StatusCode::kCorruption) {
      events_.on_corrupt(name(), path, opened.status());
    } else if (kept.present) {
      // A folder that cannot be read is said once, as the folder: its
      // packages, there or not, cannot be told apart.
      if (auto listed = env_.list_dir(folder_);
          !listed && listed.status().code() != StatusCode::kNotFound) {
        log_.warn_once(
            "SystemDb:folder:" + folder_, "SystemDb",
            "System database folder " + folder_ +
                " cannot be read, and no package in it is used: " + listed.status().message());
      } else {
        log_.warn_once("SystemDb:unreadable:" + path, "SystemDb",
                       "System database file " + path +
                           " is unreadable and is ignored: " + opened.status().message());
      }
    }
    return made;
  }

  const std::string folder_;
  const std::vector<std::string> trusted_key_paths_;
  mutable std::once_flag keys_loaded_;
  mutable TrustedKeys keys_;
  const Env& env_;
  const Logger& log_;
  TierEvents& events_;
  std::mutex mutex_;
  std::map<std::string, std::shared_ptr<Package>> packages_;
};

}  // namespace

std::unique_ptr<Tier> make_system_tier(std::string folder, std::vector<std::string> trusted_keys,
                                       const Env& env, const Logger& log, TierEvents& events) {
  return std::make_unique<SystemTier>(std::move(folder), std::move(trusted_keys), env, log, events);
}

}  // namespace kcache
