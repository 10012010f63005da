#include "store/system/system_tier.h"

#include "env/coarse_clock.h"
#include "store/system/package_fit_check.h"
#include "store/system/package_opener.h"
#include "store/system/package_trust.h"
#include "store/system/shelf_loader.h"
#include "store/system/shelf_lookup.h"
#include "store/system/system_folder.h"
#include "store/system/system_verifier.h"

namespace kcache {
namespace {

// The tier over its parts: the shelves (shelf_loader.h) of the packages it
// trusts (package_trust.h), looked up (shelf_lookup.h) for the compilers
// they serve (package_fit_check.h), and verified whole (system_verifier.h).
class SystemTier final : public Tier {
 public:
  SystemTier(std::string folder, std::vector<std::string> trusted_keys, const Env& env,
             const Logger& log, TierEvents& events, std::chrono::milliseconds recheck)
      : folder_(std::move(folder)),
        env_(env),
        log_(log),
        trust_(std::move(trusted_keys), env, log),
        opener_(trust_, env, log, events),
        shelves_(folder_, opener_, env, log, recheck),
        fit_check_(log),
        lookup_(fit_check_, events),
        verifier_(folder_, trust_, env) {}

  std::string_view name() const override { return kSystemTierName; }

  Result<std::optional<Entry>> get(const DbNames& db, const CacheKey& key) override {
    // A second round only after a package was found changed since it was
    // opened, and its shelf opened anew.
    for (int round = 0; round < 2; ++round) {
      const ShelfLoader::LookupShelves shelves = shelves_.shelves_for(db, coarse_now_ns());
      if (!shelves.exact->present && !(shelves.arch && shelves.arch->present)) {
        // Said once per process and file; the flag spares every later miss
        // the message's strings and the logger's lock.
        if (!db.quiet_when_missing && !shelves.exact->missing_reported.exchange(true)) {
          log_.warn_once(
              "SystemDb:missing:" + folder_ + "/" + db.exact, "SystemDb",
              "Missing system database file: " + db.exact + ".kdb Performance may degrade");
        }
        return std::optional<Entry>();
      }
      auto found = lookup_.find(shelves, db, key);
      if (!found) return found.status();
      if (found->entry) return std::move(found->entry);
      if (found->changed == nullptr) break;
      shelves_.reopen(*found->changed_db, *found->changed);
    }
    return std::optional<Entry>();
  }

  Result<std::vector<std::string>> databases() const override {
    return list_system_databases(folder_, env_);
  }

  Status verify(bool /*repair*/, VerifyReport& report) override { return verifier_.verify(report); }

 private:
  const std::string folder_;
  const Env& env_;
  const Logger& log_;
  const PackageTrust trust_;
  const PackageOpener opener_;
  ShelfLoader shelves_;
  const PackageFitCheck fit_check_;
  const ShelfLookup lookup_;
  const SystemVerifier verifier_;
};

}  // namespace

std::unique_ptr<Tier> make_system_tier(std::string folder, std::vector<std::string> trusted_keys,
                                       const Env& env, const Logger& log, TierEvents& events,
                                       std::chrono::milliseconds recheck) {
  return std::make_unique<SystemTier>(std::move(folder), std::move(trusted_keys), env, log, events,
                                      recheck);
}

}  // namespace kcache
