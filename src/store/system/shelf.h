// The shelf: the packages open for one database name, as the system tier
// holds them: "<db>.kdb" (absent or not), then its drop-ins
// "<db>.kdb.d/*.kdb" in name order, opened together at the database's
// first lookup (shelf_loader.h) and read by lookups (shelf_lookup.h).
// Held by each lookup that uses it: one opened anew does not free it under
// another thread.
#pragma once

#include <atomic>
#include <memory>
#include <string>
#include <vector>

#include "format/kdb_file.h"
#include "store/system/compiler_fits.h"

namespace kcache {

// One package file on a shelf: open, trusted and perhaps mapped, or held
// as absent (not there, unusable or refused). Not changed once shelved but
// for its atomics and its CompilerFits, which lookups share.
struct ShelvedPackage {
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

  // Whether it serves each compiler asked for (package_fit.h).
  CompilerFits fits;
};

// A database's packages (the comment above).
struct Shelf {
  std::string db;
  std::vector<std::shared_ptr<const ShelvedPackage>> packages;
  bool present = false;  // some package file exists, usable or not
  mutable std::atomic<bool> missing_reported{false};
};

}  // namespace kcache
