#include "store/system/system_tier.h"

#include <algorithm>
#include <atomic>
#include <filesystem>
#include <map>
#include <mutex>

#include "env/coarse_clock.h"
#include "format/kdb_file.h"
#include "store/system/package_fit.h"
#include "store/system/package_trust.h"
#include "store/system/system_folder.h"
#include "store/system/system_verifier.h"
#include "store/system/trusted_keys.h"

namespace kcache {
namespace {

// What a path held when a shelf was opened: the file's identity, size and
// modification time, or nothing there.
struct Stamp {
  std::string path;
  std::optional<FileInfo> seen;
  bool same_as(const std::optional<FileInfo>& now) const {
    if (seen.has_value() != now.has_value()) return false;
    return !seen || (seen->type == now->type && seen->id == now->id && seen->size == now->size &&
                     seen->modified_unix == now->modified_unix);
  }
};

class SystemTier final : public Tier {
 public:
  SystemTier(std::string folder, std::vector<std::string> trusted_keys, const Env& env,
             const Logger& log, TierEvents& events, std::chrono::milliseconds recheck)
      : recheck_ns_(std::chrono::nanoseconds(recheck).count()),
        folder_(std::move(folder)),
        env_(env),
        log_(log),
        events_(events),
        trust_(std::move(trusted_keys), env, log),
        verifier_(folder_, trust_, env) {}

  std::string_view name() const override { return "system"; }

  Result<std::optional<Entry>> get(const DbNames& db, const CacheKey& key) override {
    // A second round only after a package was found changed since it was
    // opened, and its shelf opened anew.
    for (int round = 0; round < 2; ++round) {
      std::shared_ptr<const Shelf> exact;
      std::shared_ptr<const Shelf> arch;
      {
        const std::int64_t now_ns = coarse_now_ns();
        std::lock_guard lock(mutex_);  // once for both: this runs on every lookup
        exact = shelf_locked(db.exact, now_ns);
        if (db.arch != db.exact) arch = shelf_locked(db.arch, now_ns);
      }
      if (!exact->present && !(arch && arch->present)) {
        // Said once per process and file; the flag spares every later miss
        // the message's strings and the logger's lock.
        if (!db.quiet_when_missing && !exact->missing_reported.exchange(true)) {
          log_.warn_once(
              "SystemDb:missing:" + folder_ + "/" + db.exact, "SystemDb",
              "Missing system database file: " + db.exact + ".kdb Performance may degrade");
        }
        return std::optional<Entry>();
      }
      bool reopened = false;
      for (const auto& [shelf, name] :
           {std::pair(exact.get(), &db.exact), {arch.get(), &db.arch}}) {
        if (shelf == nullptr || reopened) continue;
        for (const auto& p : shelf->packages) {
          const KdbReader* kdb = p->reader.get();
          if (kdb == nullptr || p->altered.load(std::memory_order_acquire) ||
              !serves(*p, *name, db.compiler, {exact.get(), arch.get()})) {
            continue;
          }
          auto slot = kdb->find(key);
          if (!slot) continue;
          auto got = entry_in(*p, *slot, key);
          if (!got) return got.status();
          if (got->entry) return std::move(got->entry);
          if (got->changed) {
            reopen(*name, *p);
            reopened = true;
            break;
          }
        }
      }
      if (!reopened) break;
    }
    return std::optional<Entry>();
  }

  Result<std::vector<std::string>> databases() const override {
    return list_system_databases(folder_, env_);
  }

  Status verify(bool /*repair*/, VerifyReport& report) override { return verifier_.verify(report); }

 private:
  // Whether a package serves a compiler: why not, and whether that was said.
  struct Fit {
    CompilerIdentity identity;
    std::optional<std::string> unfit;
    bool said = false;
  };

  struct Package {
    std::unique_ptr<KdbReader> reader;  // null when absent, unreadable or refused
    bool present = false;               // the file exists, readable or not
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
    mutable std::vector<Fit> fits;
  };

  // A database's packages, opened together at its first lookup:
  // "<db>.kdb" (absent or not), then its drop-ins "<db>.kdb.d/*.kdb" in
  // name order. Held by each lookup that uses it: one opened anew does
  // not free it under another thread.
  struct Shelf {
    std::string db;
    std::vector<std::shared_ptr<const Package>> packages;
    bool present = false;  // some package file exists, usable or not
    mutable std::atomic<bool> missing_reported{false};
    // What its files were when it was opened (<db>.kdb, the drop-in
    // folder, each drop-in), looked at again now and then (recheck_ns_,
    // mutex_ held): a package installed where none was, a drop-in added,
    // a file renamed over one that could not be used, are taken up.
    std::vector<Stamp> stamps;
    mutable std::int64_t checked_ns = 0;  // coarse monotonic clock
  };

  // What entry_in found: the entry, nothing (a bad entry, reported), or a
  // package that changed since it was opened and must be opened anew.
  struct Found {
    std::optional<Entry> entry;
    bool changed = false;
  };

  // The entry in `slot` of `p` for `key`, verified (docs/design.md §3.2): a
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

  // `p`, a package of `db`, changed since it was opened: never lent from
  // again, and the database's packages opened anew by the next lookup. A
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
    auto it = shelves_.find(db);
    if (it == shelves_.end()) return;
    const auto& held = it->second->packages;
    if (std::any_of(held.begin(), held.end(), [&](const auto& one) { return one.get() == &p; })) {
      shelves_.erase(it);
    }
  }

  // Whether `p` (found as `db`) can serve `compiler` at all, decided once
  // per compiler (package_fit.h). One that cannot is said once, rather
  // than a silent miss on every request (the keys would not match
  // anyway): as a warning when it serves no compiler or no package of
  // `shelves` can serve this one either, else (another library's
  // package, packed by another toolchain, beside the one that serves)
  // as a debug line.
  bool serves(const Package& p, const std::string& db, const CompilerIdentity* compiler,
              std::initializer_list<const Shelf*> shelves) const {
    if (compiler == nullptr) return true;
    std::string reason;
    {
      std::lock_guard lock(p.fit_mutex);
      Fit& fit = fit_locked(p, db, *compiler);
      if (!fit.unfit || fit.said) return !fit.unfit;
      fit.said = true;
      reason = *fit.unfit;
    }
    // Another database's, or another key format's: no compiler's, said.
    const bool nobodys = unfit_reason(p.reader->metadata(), db, CompilerIdentity{}).has_value();
    const std::string text = "System database file " + p.reader->path() + " is not used" +
                             (nobodys ? ": " : " for this compiler: ") + reason;
    for (const Shelf* shelf : shelves) {
      if (shelf == nullptr || nobodys) continue;
      for (const auto& other : shelf->packages) {
        if (other.get() == &p || other->reader == nullptr) continue;
        std::lock_guard lock(other->fit_mutex);
        if (!fit_locked(*other, shelf->db, *compiler).unfit) {
          log_.debug("SystemDb", text + " (" + other->reader->path() + " is)");
          return false;
        }
      }
    }
    log_.warn_once("SystemDb:unfit:" + p.reader->path() + ":" + identity_text(*compiler),
                   "SystemDb", text);
    return false;
  }

  // What is known of `p` (found as `db`) and `compiler`, p.fit_mutex held:
  // a few identities, most recent first.
  Fit& fit_locked(const Package& p, const std::string& db, const CompilerIdentity& compiler) const {
    constexpr std::size_t kRemembered = 4;
    for (Fit& fit : p.fits) {
      if (fit.identity.version == compiler.version && fit.identity.id == compiler.id &&
          fit.identity.backend == compiler.backend) {
        return fit;
      }
    }
    if (p.fits.size() == kRemembered) p.fits.pop_back();
    p.fits.insert(p.fits.begin(), Fit{compiler, unfit_reason(p.reader->metadata(), db, compiler)});
    return p.fits.front();
  }

  // The packages of `db`, opened once per process (again after one of
  // them changed), mutex_ held.
  std::shared_ptr<const Shelf> shelf_locked(const std::string& db, std::int64_t now_ns) {
    auto it = shelves_.find(db);
    if (it != shelves_.end()) {
      const Shelf& held = *it->second;
      if (now_ns - held.checked_ns < recheck_ns_) return it->second;
      held.checked_ns = now_ns;
      if (std::all_of(held.stamps.begin(), held.stamps.end(), [&](const Stamp& stamp) {
            return stamp.same_as(file_info_or_none(stamp.path));
          })) {
        return it->second;
      }
      log_.debug("SystemDb", "the packages of " + db + " changed on disk; they are opened anew");
      shelves_.erase(it);  // lookups holding it finish with it
    }
    auto shelf = std::make_shared<Shelf>();
    shelf->db = db;
    shelf->checked_ns = now_ns;
    // Stamped before they are opened: a change after the stamp is seen
    // at the next look, never missed.
    const std::string main = system_package_path(folder_, db);
    const std::string drop_ins = drop_in_folder_of(folder_, db);
    shelf->stamps.push_back({main, file_info_or_none(main)});
    shelf->stamps.push_back({drop_ins, file_info_or_none(drop_ins)});
    shelf->packages.push_back(open_package(main));
    if (const DropInFolder listed = read_drop_in_folder(drop_ins, env_);
        listed.problem == DropInFolder::Problem::kNone) {
      for (const auto& [name, why] : listed.not_packages) {
        const std::string path = drop_ins + "/" + name;
        log_.warn_once("SystemDb:not-a-package:" + path, "SystemDb",
                       "System database drop-in " + path + " is not used: it is " + why);
      }
      // Each is held open (and mapped) for the process: a bound, so that a
      // folder of hundreds cannot take the program's descriptors.
      if (listed.used() < listed.packages.size()) {
        log_.warn_once("SystemDb:many:" + drop_ins, "SystemDb",
                       "System database drop-in folder " + drop_ins + " holds " +
                           std::to_string(listed.packages.size()) + " packages; the first " +
                           std::to_string(kMostDropIns) + " in name order are used");
      }
      for (std::size_t i = 0; i < listed.used(); ++i) {
        const std::string path = drop_ins + "/" + listed.packages[i];
        shelf->stamps.push_back({path, file_info_or_none(path)});
        shelf->packages.push_back(open_package(path));
      }
    } else if (env_.list_dir(folder_)) {  // else the folder was said as one
      // There, but its packages cannot be told apart: said once, and the
      // database is not "missing".
      shelf->present = true;
      log_.warn_once("SystemDb:folder:" + drop_ins, "SystemDb",
                     drop_in_folder_problem(drop_ins, listed) + "; its packages are not used");
    }
    for (const auto& p : shelf->packages) shelf->present = shelf->present || p->present;
    shelves_[db] = shelf;
    return shelf;
  }

  std::optional<FileInfo> file_info_or_none(const std::string& path) const {
    auto info = env_.file_info(path);
    return info ? std::optional<FileInfo>(*info) : std::nullopt;
  }

  // The package file at `path`, opened, trusted and mapped (or refused,
  // said once, and held as absent).
  std::shared_ptr<const Package> open_package(const std::string& path) const {
    auto made = std::make_shared<Package>();
    Package& kept = *made;
    if (trust_.refuses_unopened(path)) {
      kept.present = true;  // refused, not missing: no second warning
      return made;
    }
    auto opened = KdbReader::open(path, env_);
    if (opened) {
      const PackageTrust::Admission admitted = trust_.admit_opened(path, **opened);
      if (!admitted.used) {
        kept.present = true;
        return made;
      }
      kept.check_digests = admitted.check_digests;
      kept.check_every_read = admitted.check_every_read;
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
      const std::string folder = std::filesystem::path(path).parent_path().string();
      if (auto listed = env_.list_dir(folder);
          !listed && listed.status().code() != StatusCode::kNotFound) {
        log_.warn_once(
            "SystemDb:folder:" + folder, "SystemDb",
            "System database folder " + folder +
                " cannot be read, and no package in it is used: " + listed.status().message());
      } else {
        log_.warn_once("SystemDb:unreadable:" + path, "SystemDb",
                       "System database file " + path +
                           " is unreadable and is ignored: " + opened.status().message());
      }
    }
    return made;
  }

  const std::int64_t recheck_ns_;  // how often a shelf's files are looked at again
  const std::string folder_;
  const Env& env_;
  const Logger& log_;
  TierEvents& events_;
  const PackageTrust trust_;
  const SystemVerifier verifier_;
  std::mutex mutex_;
  std::map<std::string, std::shared_ptr<const Shelf>> shelves_;
};

}  // namespace

std::unique_ptr<Tier> make_system_tier(std::string folder, std::vector<std::string> trusted_keys,
                                       const Env& env, const Logger& log, TierEvents& events,
                                       std::chrono::milliseconds recheck) {
  return std::make_unique<SystemTier>(std::move(folder), std::move(trusted_keys), env, log, events,
                                      recheck);
}

}  // namespace kcache
