#include "store/system/compiler_fits.h"

#include "store/system/package_fit.h"

namespace kcache {

CompilerFits::Answer CompilerFits::ask(const Fields& metadata, std::string_view db,
                                       const CompilerIdentity& compiler) const {
  MutexLock lock(mutex_);
  CompilerFit& fit = fit_locked(metadata, db, compiler);
  if (!fit.unfit || fit.said) return Answer{!fit.unfit, std::nullopt};
  fit.said = true;
  return Answer{false, *fit.unfit};
}

bool CompilerFits::serves(const Fields& metadata, std::string_view db,
                          const CompilerIdentity& compiler) const {
  MutexLock lock(mutex_);
  return !fit_locked(metadata, db, compiler).unfit;
}

CompilerFits::CompilerFit& CompilerFits::fit_locked(const Fields& metadata, std::string_view db,
                                                    const CompilerIdentity& compiler) const {
  constexpr std::size_t kRemembered = 4;
  for (CompilerFit& fit : fits_) {
    if (fit.identity.version == compiler.version && fit.identity.id == compiler.id &&
        fit.identity.backend == compiler.backend) {
      return fit;
    }
  }
  if (fits_.size() == kRemembered) fits_.pop_back();
  fits_.insert(fits_.begin(), CompilerFit{compiler, unfit_reason(metadata, db, compiler)});
  return fits_.front();
}

}  // namespace kcache
