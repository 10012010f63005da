#include "env/trusted_path.h"

#include <cstdio>
#include <filesystem>
#include <system_error>

namespace kcache {
namespace {

namespace fs = std::filesystem;

// How untrusted_reason says that the file itself is a link.
constexpr std::string_view kIsALink = " is a symbolic link";

std::string octal(mode_t mode) {
  char text[8];
  std::snprintf(text, sizeof text, "%04o", static_cast<unsigned>(mode & 07777));
  return text;
}

std::optional<std::string> owner_reason(const std::string& what, const FileInfo& info, uid_t me) {
  if (info.owner == 0 || info.owner == me) return std::nullopt;
  return what + " is owned by another user (uid " + std::to_string(info.owner) + ")";
}

// Whether someone but its owner may write it, and how ("mode 0666",
// "its ACL lets user 1001 write"): others, a group that holds more than
// this user, or a user or group its ACL names. An ACL that cannot be
// read is taken as letting others write.
std::optional<std::string> writable_by_others(const std::string& path, const FileInfo& info,
                                              const Env& env, uid_t me) {
  const std::string mode = "mode " + octal(info.mode);
  if ((info.mode & 002) != 0) return mode;
  if ((info.mode & 020) != 0 && !env.group_is_private(info.group)) return mode;
  auto acl = env.acl_writers(path);
  if (!acl) {
    if (acl.status().code() == StatusCode::kNotFound) return std::nullopt;  // gone: the caller's
    return "its ACL cannot be read: " + acl.status().message();
  }
  for (uid_t user : acl->users) {
    if (user != 0 && user != me) return "its ACL lets user " + std::to_string(user) + " write";
  }
  for (gid_t group : acl->groups) {
    if (!env.group_is_private(group))
      return "its ACL lets group " + std::to_string(group) + " write";
  }
  return std::nullopt;
}

// `folder` and every folder above it; `holding`: `folder` holds the file
// (or is the folder that must be trusted itself).
std::optional<std::string> folders_reason(fs::path folder, const Env& env, uid_t me,
                                          bool holding = true) {
  for (;;) {
    const std::string name = folder.empty() ? "/" : folder.string();
    auto info = env.file_info(name);
    if (!info) return "folder " + name + " cannot be looked at: " + info.status().message();
    // Not a folder (a file, a FIFO, /dev/zero named as the cache): nothing
    // is beneath it, and nothing can be made there until a folder takes
    // its place, which is then asked again (untrusted_folder_reason). Its
    // mode is no folder's: whoever may write /dev/zero cannot add a file
    // under it. The failure to make the folder says what it is.
    const bool folder_or_link =
        info->type == FileType::kDirectory || info->type == FileType::kSymlink;
    if (folder_or_link) {
      if (auto reason = owner_reason("folder " + name, *info, me)) return reason;
    }
    // A link's own mode means nothing; its target is checked apart.
    const auto how = info->type == FileType::kDirectory ? writable_by_others(name, *info, env, me)
                                                        : std::nullopt;
    if (how) {
      if (holding) return "folder " + name + " is writable by others (" + *how + ")";
      if ((info->mode & 01000) == 0) {
        return "folder " + name + " is writable by others without the sticky bit (" + *how + ")";
      }
    }
    holding = false;  // above it, a sticky folder keeps what others own in place
    if (!folder.has_relative_path()) return std::nullopt;  // that was "/"
    folder = folder.parent_path();
  }
}

}  // namespace

std::string refusal_words(const std::string& reason) {
  if (reason.ends_with(kIsALink)) {
    return "it is a symbolic link, which is not followed (" + reason +
           "; put the file itself there, as kcache install does)";
  }
  return "another user could have written it (" + reason + ")";
}

std::optional<std::string> untrusted_reason(const std::string& path, const Env& env) {
  auto info = env.file_info(path);
  if (!info) return std::nullopt;
  const uid_t me = env.user_id();
  const std::string what = (info->type == FileType::kDirectory ? "folder " : "file ") + path;
  if (info->type == FileType::kSymlink) return what + std::string(kIsALink);
  if (auto reason = owner_reason(what, *info, me)) return reason;
  if (auto how = writable_by_others(path, *info, env, me)) {
    return what + " is writable by others (" + *how + ")";
  }
  std::error_code error;
  const fs::path absolute = fs::absolute(path, error).lexically_normal();
  if (error) return what + " cannot be placed: " + error.message();
  if (auto reason = folders_reason(absolute.parent_path(), env, me)) return reason;
  // Through the links on the way: where the file really is.
  const fs::path real = fs::canonical(absolute.parent_path(), error);
  if (error) return "the folder of " + path + " cannot be resolved: " + error.message();
  if (real != absolute.parent_path()) return folders_reason(real, env, me);
  return std::nullopt;
}

std::optional<std::string> untrusted_folder_reason(const std::string& path, const Env& env) {
  const uid_t me = env.user_id();
  std::error_code error;
  fs::path folder = fs::absolute(path, error).lexically_normal();
  if (error) return "folder " + path + " cannot be placed: " + error.message();
  // Not made yet: whoever could replace it once made is the one to ask.
  bool holding = true;
  while (!env.file_info(folder.string()).is_ok() && folder.has_relative_path()) {
    folder = folder.parent_path();
    holding = false;
  }
  if (auto reason = folders_reason(folder, env, me, holding)) return reason;
  const fs::path real = fs::canonical(folder, error);
  if (error) return "folder " + folder.string() + " cannot be resolved: " + error.message();
  if (real != folder) return folders_reason(real, env, me, holding);
  return std::nullopt;
}

namespace {

// Where `path` leads through its links, each held to the rule as its
// owner's (owned by root or this user, in folders others cannot replace
// it in: writable by others only with the sticky bit): the path of the
// file the last one names (absent or not), or why a link cannot be
// trusted.
struct FollowedLinks {
  std::string path;
  std::optional<std::string> untrusted;
};

FollowedLinks follow_trusted_links(const std::string& path, const Env& env) {
  constexpr int kMostLinks = 16;
  const uid_t me = env.user_id();
  std::string at = path;
  for (int links = 0; links < kMostLinks; ++links) {
    auto info = env.file_info(at);
    if (!info || info->type != FileType::kSymlink) return {at, std::nullopt};
    // Whoever owns the link, or can replace it in its folder, says what
    // it names.
    if (auto reason = owner_reason("link " + at, *info, me)) return {at, reason};
    std::error_code error;
    const fs::path link = fs::absolute(at, error).lexically_normal();
    if (error) return {at, "link " + at + " cannot be placed: " + error.message()};
    if (auto reason = folders_reason(link.parent_path(), env, me, /*holding=*/false)) {
      return {at, reason};
    }
    const fs::path real = fs::canonical(link.parent_path(), error);
    if (error) return {at, "the folder of " + at + " cannot be resolved: " + error.message()};
    if (real != link.parent_path()) {
      if (auto reason = folders_reason(real, env, me, /*holding=*/false)) return {at, reason};
    }
    const fs::path target = fs::read_symlink(link, error);
    if (error) return {at, "link " + at + " cannot be read: " + error.message()};
    at = (target.is_absolute() ? target : real / target).lexically_normal().string();
  }
  return {at,
          "file " + path + " is named through more than " + std::to_string(kMostLinks) + " links"};
}

}  // namespace

std::optional<std::string> untrusted_reason_through_links(const std::string& path, const Env& env) {
  FollowedLinks followed = follow_trusted_links(path, env);
  if (followed.untrusted) return followed.untrusted;
  return untrusted_reason(followed.path, env);  // nullopt when absent
}

std::optional<std::string> untrusted_appended_file_reason(const std::string& path, const Env& env,
                                                          std::string& real_path) {
  FollowedLinks followed = follow_trusted_links(path, env);
  real_path = followed.path;
  if (followed.untrusted) return followed.untrusted;
  const uid_t me = env.user_id();
  std::error_code error;
  const fs::path absolute = fs::absolute(followed.path, error).lexically_normal();
  if (error) return "file " + followed.path + " cannot be placed: " + error.message();
  // A folder that is not there: the open says so.
  if (env.file_info(absolute.parent_path().string()).status().code() == StatusCode::kNotFound) {
    return std::nullopt;
  }
  // Its folder may be one others write in when the sticky bit keeps what
  // this user owns there in place (/tmp): the file itself is judged as
  // it is opened (untrusted_open_file_reason).
  if (auto reason = folders_reason(absolute.parent_path(), env, me, /*holding=*/false)) {
    return reason;
  }
  const fs::path real = fs::canonical(absolute.parent_path(), error);
  if (error) return "the folder of " + followed.path + " cannot be resolved: " + error.message();
  if (real != absolute.parent_path()) {
    if (auto reason = folders_reason(real, env, me, /*holding=*/false)) return reason;
  }
  real_path = (real / absolute.filename()).string();
  return untrusted_open_file_reason(real_path, std::nullopt, env);
}

std::optional<std::string> untrusted_open_file_reason(const std::string& path,
                                                      std::optional<FileId> opened,
                                                      const Env& env) {
  auto info = env.file_info(path);
  if (!info) {
    if (info.status().code() == StatusCode::kNotFound && !opened) return std::nullopt;
    return "file " + path + " cannot be looked at: " + info.status().message();
  }
  const std::string what = "file " + path;
  if (info->type == FileType::kSymlink) return what + std::string(kIsALink);
  // A FIFO, a device, a folder: not the rule's to judge (the caller reads
  // and appends to regular files alone, and says so).
  if (info->type != FileType::kRegular) return std::nullopt;
  if (opened && info->id != *opened) return what + " was replaced as it was opened";
  const uid_t me = env.user_id();
  if (auto reason = owner_reason(what, *info, me)) return reason;
  if (auto how = writable_by_others(path, *info, env, me)) {
    return what + " is writable by others (" + *how + ")";
  }
  return std::nullopt;
}

}  // namespace kcache
