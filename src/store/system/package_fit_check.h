// Whether a package on a shelf serves the compiler a lookup is for
// (package_fit.h), decided once per compiler (compiler_fits.h). One that
// cannot is said once, rather than a silent miss on every request (the
// keys would not match anyway): as a warning when it serves no compiler
// or no package of the lookup's shelves can serve this one either, else
// (another library's package, packed by another toolchain, beside the
// one that serves) as a debug line.
#pragma once

#include <kcache/compiler.h>

#include <initializer_list>
#include <string>

#include "base/log.h"
#include "store/system/shelf.h"

namespace kcache {

class PackageFitCheck {
 public:
  explicit PackageFitCheck(const Logger& log);

  // Whether `p` (found as `db`), an open package, can serve `compiler` at
  // all; every package does when `compiler` is null. `shelves`: those of
  // the lookup (null ones passed over), where another package may serve.
  bool serves(const ShelvedPackage& p, const std::string& db, const CompilerIdentity* compiler,
              std::initializer_list<const Shelf*> shelves) const;

 private:
  const Logger& log_;
};

}  // namespace kcache
