#include "store/system/package_opener.h"

#include <filesystem>

#include "store/system/system_tier.h"

namespace kcache {

PackageOpener::PackageOpener(const PackageTrust& trust, const Env& env, const Logger& log,
                             TierEvents& events)
    : trust_(trust), env_(env), log_(log), events_(events) {}

std::shared_ptr<const ShelvedPackage> PackageOpener::open(const std::string& path) const {
  auto made = std::make_shared<ShelvedPackage>();
  ShelvedPackage& kept = *made;
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
    events_.on_corrupt(kSystemTierName, path, opened.status());
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

}  // namespace kcache
