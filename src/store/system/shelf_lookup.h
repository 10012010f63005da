// A key looked up on the shelves of a lookup (shelf_loader.h): each open
// package that serves the compiler (package_fit_check.h), the exact
// database's first, each shelf's in its order, until one holds a good
// entry of the key. An entry is verified as it is read (docs/design.md
// §3.2): a view of the mapping when mapped, otherwise a copy.
#pragma once

#include <optional>
#include <string>

#include "store/system/package_fit_check.h"
#include "store/system/shelf.h"
#include "store/system/shelf_loader.h"
#include "store/tier.h"

namespace kcache {

class ShelfLookup {
 public:
  ShelfLookup(const PackageFitCheck& fit_check, TierEvents& events);

  // What find() found: the entry, or none; or a package that changed since
  // it was opened (`changed`, on the shelf of `changed_db`): the shelf
  // must be opened anew (ShelfLoader::reopen) and the lookup made again.
  struct Outcome {
    std::optional<Entry> entry;
    const ShelvedPackage* changed = nullptr;
    const std::string* changed_db = nullptr;  // db.exact or db.arch
  };
  // `key` on `shelves`, the shelves of `db`. A bad entry is reported and
  // passed over; a Status when a read fails.
  Result<Outcome> find(const ShelfLoader::LookupShelves& shelves, const DbNames& db,
                       const CacheKey& key) const;

 private:
  // What entry_in found: the entry, nothing (a bad entry, reported), or a
  // package that changed since it was opened and must be opened anew.
  struct EntryInPackage {
    std::optional<Entry> entry;
    bool package_changed = false;
  };
  Result<EntryInPackage> entry_in(const ShelvedPackage& p, const KdbSlot& slot,
                                  const CacheKey& key) const;
  Result<EntryInPackage> bad_entry(const ShelvedPackage& p, const std::string& where,
                                   const Status& problem) const;

  const PackageFitCheck& fit_check_;
  TierEvents& events_;
};

}  // namespace kcache
