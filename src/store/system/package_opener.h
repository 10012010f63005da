// Opens one package file for a shelf (shelf.h): trusted (package_trust.h)
// and mapped where that is safe, or refused or unusable, said once, and
// held as absent.
#pragma once

#include <memory>
#include <string>

#include "base/log.h"
#include "env/env.h"
#include "store/system/package_trust.h"
#include "store/system/shelf.h"
#include "store/tier.h"

namespace kcache {

class PackageOpener {
 public:
  PackageOpener(const PackageTrust& trust, const Env& env, const Logger& log, TierEvents& events);

  // The package file at `path`, opened, trusted and mapped (or refused,
  // said once, and held as absent).
  std::shared_ptr<const ShelvedPackage> open(const std::string& path) const;

 private:
  const PackageTrust& trust_;
  const Env& env_;
  const Logger& log_;
  TierEvents& events_;
};

}  // namespace kcache
