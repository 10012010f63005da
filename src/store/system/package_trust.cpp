#include "store/system/package_trust.h"

#include "env/trusted_path.h"

namespace kcache {
namespace {

// Why a package is refused, in the words of its warning and of verify.
std::string untrusted_text(const std::string& reason) {
  return "not used: " + refusal_words(reason) + "; fix the owner or mode, or remove it";
}
std::string unsigned_text(const std::string& refusal) {
  return "not used: " + refusal + " (KCACHE_TRUSTED_KEYS)";
}

}  // namespace

PackageTrust::PackageTrust(std::vector<std::string> key_paths, const Env& env, const Logger& log)
    : key_paths_(std::move(key_paths)), env_(env), log_(log) {}

const TrustedKeys& PackageTrust::keys() const {
  std::call_once(keys_loaded_, [this] {
    keys_ = TrustedKeys::load(key_paths_, env_);
    for (const auto& problem : keys_.problems()) {
      log_.warn_once("SystemDb:key:" + problem, "SystemDb", problem);
    }
  });
  return keys_;
}

bool PackageTrust::refuses_unopened(const std::string& path) const {
  const TrustedKeys& keys = this->keys();
  // A package another user could write is refused, once, and the tier
  // goes on without it. With keys, its signature decides.
  const auto owner_problem = untrusted_reason(path, env_);
  if (!owner_problem || keys.configured()) return false;
  warn_untrusted(path, *owner_problem);
  return true;
}

PackageTrust::Admission PackageTrust::admit_opened(const std::string& path,
                                                   const KdbReader& kdb) const {
  const TrustedKeys& keys = this->keys();
  // Checked again on the file opened: one put in place between the first
  // check and the open (the file was absent then, say) is held to the
  // rule as well.
  const auto opened_problem = owner_problem_of_opened(path, kdb);
  if (opened_problem && !keys.configured()) {
    warn_untrusted(path, *opened_problem);
    return Admission{};
  }
  // Without keys, a package that says it is signed is still held to its
  // signature (once, at open): one altered after signing is refused, not
  // served as if unsigned (one that cannot be checked here, without
  // libsodium, is served as before). Entries' digests are checked under
  // keys.
  if (!keys.configured()) {
    if (auto broken = signature_failure(kdb); broken && broken->checked) {
      log_.warn_once("SystemDb:unsigned:" + path, "SystemDb",
                     "System database file " + path + " is not used: " + broken->why);
      return Admission{};
    }
    return Admission{.used = true};
  }
  if (auto refusal = keys.refusal(kdb)) {
    log_.warn_once("SystemDb:unsigned:" + path, "SystemDb",
                   "System database file " + path + " is " + unsigned_text(*refusal));
    return Admission{};
  }
  return Admission{
      .used = true, .check_digests = true, .check_every_read = opened_problem.has_value()};
}

std::optional<std::string> PackageTrust::owner_refusal(const std::string& path) const {
  const TrustedKeys& keys = this->keys();
  const auto owner_problem = untrusted_reason(path, env_);
  if (owner_problem && !keys.configured()) return untrusted_text(*owner_problem);
  return std::nullopt;
}

std::optional<std::string> PackageTrust::signature_refusal(const KdbReader& kdb) const {
  const TrustedKeys& keys = this->keys();
  auto refusal = keys.configured() ? keys.refusal(kdb) : signature_problem(kdb);
  if (refusal) return unsigned_text(*refusal);
  return std::nullopt;
}

std::optional<std::string> PackageTrust::owner_problem_of_opened(const std::string& path,
                                                                 const KdbReader& kdb) const {
  if (auto reason = untrusted_reason(path, env_)) return reason;
  auto now = env_.file_info(path);
  if (!now || !(now->id == kdb.file_id())) return "it was replaced while it was opened";
  return std::nullopt;
}

// Once per folder when a folder is the reason (every package beneath it is
// refused alike: a drop-in folder others can write holds many).
void PackageTrust::warn_untrusted(const std::string& path, const std::string& reason) const {
  if (reason.starts_with("folder ")) {
    log_.warn_once("SystemDb:untrusted:" + reason, "SystemDb",
                   "System database file " + path + " is " + untrusted_text(reason) +
                       " (as is any other package beneath that folder)");
    return;
  }
  log_.warn_once("SystemDb:untrusted:" + path, "SystemDb",
                 "System database file " + path + " is " + untrusted_text(reason));
}

}  // namespace kcache
