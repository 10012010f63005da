#include "store/system/package_fit_check.h"

#include "store/system/package_fit.h"

namespace kcache {

PackageFitCheck::PackageFitCheck(const Logger& log) : log_(log) {}

bool PackageFitCheck::serves(const ShelvedPackage& p, const std::string& db,
                             const CompilerIdentity* compiler,
                             std::initializer_list<const Shelf*> shelves) const {
  if (compiler == nullptr) return true;
  CompilerFits::Answer answer = p.fits.ask(p.reader->metadata(), db, *compiler);
  if (!answer.unsaid_reason) return answer.serves;
  const std::string& reason = *answer.unsaid_reason;
  // Another database's, or another key format's: no compiler's, said.
  const bool nobodys = unfit_reason(p.reader->metadata(), db, CompilerIdentity{}).has_value();
  const std::string text = "System database file " + p.reader->path() + " is not used" +
                           (nobodys ? ": " : " for this compiler: ") + reason;
  for (const Shelf* shelf : shelves) {
    if (shelf == nullptr || nobodys) continue;
    for (const auto& other : shelf->packages) {
      if (other.get() == &p || other->reader == nullptr) continue;
      if (other->fits.serves(other->reader->metadata(), shelf->db, *compiler)) {
        log_.debug("SystemDb", text + " (" + other->reader->path() + " is)");
        return false;
      }
    }
  }
  log_.warn_once("SystemDb:unfit:" + p.reader->path() + ":" + identity_text(*compiler), "SystemDb",
                 text);
  return false;
}

}  // namespace kcache
