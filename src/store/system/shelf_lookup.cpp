#include "store/system/shelf_lookup.h"

#include <utility>

#include "store/system/system_tier.h"
#include "store/system/trusted_keys.h"

namespace kcache {

ShelfLookup::ShelfLookup(const PackageFitCheck& fit_check, TierEvents& events)
    : fit_check_(fit_check), events_(events) {}

Result<ShelfLookup::Outcome> ShelfLookup::find(const ShelfLoader::LookupShelves& shelves,
                                               const DbNames& db, const CacheKey& key) const {
  const Shelf* exact = shelves.exact.get();
  const Shelf* arch = shelves.arch.get();
  for (const auto& [shelf, name] : {std::pair(exact, &db.exact), {arch, &db.arch}}) {
    if (shelf == nullptr) continue;
    for (const auto& p : shelf->packages) {
      const KdbReader* kdb = p->reader.get();
      if (kdb == nullptr || p->altered.load(std::memory_order_acquire) ||
          !fit_check_.serves(*p, *name, db.compiler, {exact, arch})) {
        continue;
      }
      auto slot = kdb->find(key);
      if (!slot) continue;
      auto got = entry_in(*p, *slot, key);
      if (!got) return got.status();
      if (got->entry) return Outcome{std::move(got->entry)};
      if (got->package_changed) return Outcome{std::nullopt, p.get(), name};
    }
  }
  return Outcome{};
}

// The entry in `slot` of `p` for `key`, verified (docs/design.md §3.2): a
// view of the mapping when mapped, lent unchecked only while the file is
// as it was opened; otherwise a copy. An entry's first use needs no look
// at the file: its full check holds whatever the file now holds there
// (a changed file fails it, or holds a whole entry of this key).
Result<ShelfLookup::EntryInPackage> ShelfLookup::entry_in(const ShelvedPackage& p,
                                                          const KdbSlot& slot,
                                                          const CacheKey& key) const {
  const KdbReader& kdb = *p.reader;
  std::atomic<bool>& checked = p.checked[slot.ordinal];
  const bool first = !checked.load(std::memory_order_acquire);
  if (kdb.mapped() && !first) {
    auto unchanged = kdb.unchanged();
    if (!unchanged) return unchanged.status();
    if (!*unchanged) return EntryInPackage{std::nullopt, true};
  }
  auto bytes = kdb.view(slot);
  if (!bytes) return bytes.status();
  if (p.check_digests && (first || p.check_every_read) &&
      !matches_signed_digest(kdb, slot, bytes->span())) {
    auto unchanged = kdb.unchanged();
    if (unchanged && !*unchanged)
      return EntryInPackage{std::nullopt, true};  // replaced: opened anew
    // One report for the package, not one per entry.
    if (!p.altered.exchange(true)) {
      events_.on_corrupt(kSystemTierName, kdb.path(),
                         Status::corruption("entry " + key.hex() +
                                            " is not the one it was signed with: the package "
                                            "was altered after it was signed"));
    }
    return EntryInPackage{};
  }
  const EntryCheck check = kdb.mapped() && !first ? EntryCheck::kChecksumPassed : EntryCheck::kFull;
  auto entry = decode_entry(*bytes, &key, check);
  if (!entry) return bad_entry(p, kdb.path() + "#" + key.hex(), entry.status());
  if (first) checked.store(true, std::memory_order_release);
  return EntryInPackage{std::move(*entry), false};
}

// A bad entry in `p`: reported and skipped (a read-only package cannot
// be repaired here), unless a page of the mapping was lost while it was
// read (a truncation: the package is opened anew instead).
Result<ShelfLookup::EntryInPackage> ShelfLookup::bad_entry(const ShelvedPackage& p,
                                                           const std::string& where,
                                                           const Status& problem) const {
  auto unchanged = p.reader->unchanged();
  if (unchanged && !*unchanged) return EntryInPackage{std::nullopt, true};
  events_.on_corrupt(kSystemTierName, where, problem);
  return EntryInPackage{};
}

}  // namespace kcache
