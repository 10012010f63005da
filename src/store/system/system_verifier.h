// `kcache verify` of the system tier: each database's package and drop-ins
// checked whole, as the tier would use them (trust, signature, fit for the
// database, every entry). Packages are read-only here: a problem is named,
// never repaired (--repair leaves it).
#pragma once

#include <kcache/admin.h>
#include <kcache/status.h>

#include <string>

#include "env/env.h"
#include "store/system/package_trust.h"

namespace kcache {

class SystemVerifier {
 public:
  SystemVerifier(std::string folder, const PackageTrust& trust, const Env& env);

  // Checks every package of the system folder into `report`; a Status
  // when the folder cannot be listed.
  Status verify(VerifyReport& report) const;

 private:
  // Checks the package at `path`, found as database `db`, into `report`.
  void verify_package(const std::string& path, const std::string& db, VerifyReport& report) const;

  const std::string folder_;
  const PackageTrust& trust_;
  const Env& env_;
};

}  // namespace kcache
