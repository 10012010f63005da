#include "store/system/system_folder.h"

#include <set>
#include <tuple>

#include "env/trusted_path.h"
#include "format/kdb_file.h"
#include "store/system/package_fit.h"
#include "store/system/trusted_keys.h"

namespace kcache {
namespace {

constexpr std::string_view kPackageSuffix = ".kdb";

// Whether `file_name`, in a drop-in folder, is named as a package: "*.kdb",
// not hidden (".x.kdb" is an install's temporary).
bool is_drop_in_package(std::string_view file_name) {
  return file_name.size() > kPackageSuffix.size() && file_name.ends_with(kPackageSuffix) &&
         !file_name.starts_with('.');
}

// Why what is at a drop-in's name is not a package file; empty when it is
// one.
std::string not_a_package_reason(FileType type) {
  switch (type) {
    case FileType::kRegular:
      return {};
    case FileType::kDirectory:
      return "a folder, not a package file";
    case FileType::kSymlink:
      // As the system tier says of a link in a package's place
      // (trusted_path.h: refusal_words).
      return "a symbolic link, which is not followed (put the file itself there, as kcache "
             "install does)";
    case FileType::kOther:
      break;
  }
  return "not a regular file (a FIFO, socket or device), so not a package file";
}

// `message`, an Env error about `path` ("cannot list <path>: <why>"),
// without the words that name the path: <why>.
std::string error_alone(const std::string& message, const std::string& path) {
  const std::string named = " " + path + ": ";
  const std::size_t at = message.find(named);
  return at == std::string::npos ? message : message.substr(at + named.size());
}

// Why `folder` lists no package, when the folder itself is the reason
// (`listed`: its listing); empty otherwise.
std::string folder_problem(const std::string& folder, const Status& listed, const Env& env) {
  if (!env.stamp(folder)) return "no such folder";  // links followed, as the tier follows them
  if (!env.is_dir(folder)) return "not a folder";
  if (listed.is_ok()) return {};
  // Listing needs read permission, finding a package by its name only
  // search (0711): the tier may still serve what is in it.
  const bool searchable = env.stamp(system_folder_path(folder, ".")).is_ok();
  return "cannot list it: " + error_alone(listed.message(), folder) +
         (searchable ? "; a package in it is still found by its name, but none can be shown here"
                     : "");
}

// Whether the tier uses the package it opens at `item.path` (found as
// `item.db`), and why not: it cannot be read, it is refused (its file's
// owner or mode, its signature, the trusted keys), or it was packed for
// another database or with another key or entry format.
std::string why_package_not_used(const SystemFolderItem& item, const TrustedKeys& keys,
                                 const Env& env) {
  const auto untrusted = untrusted_reason(item.path, env);
  auto kdb = KdbReader::open(item.path, env);
  if (!kdb) return kdb.status().message();
  if (auto refusal = package_refusal(**kdb, untrusted, keys)) return *refusal;
  if (auto unfit = unfit_reason((*kdb)->metadata(), item.db, CompilerIdentity{})) return *unfit;
  return {};
}

// The items of one drop-in folder, `name` in `folder`, of database `db`.
void add_drop_ins(const std::string& folder, const std::string& name, const std::string& db,
                  const TrustedKeys& keys, const Env& env, std::vector<SystemFolderItem>& items) {
  const DropInFolder drop_ins = read_drop_in_folder(system_folder_path(folder, name), env);
  if (drop_ins.problem != DropInFolder::Problem::kNone) {
    items.push_back({.name = name, .path = system_folder_path(folder, name), .db = db});
    items.back().why_not_used =
        drop_ins.problem == DropInFolder::Problem::kNotAFolder
            ? "a drop-in folder that is not a folder; its packages are not used"
            : "a drop-in folder that cannot be read (" + drop_ins.unreadable_why +
                  "); its packages are not used";
    return;
  }
  for (std::size_t i = 0; i < drop_ins.packages.size(); ++i) {
    const std::string file = name + "/" + drop_ins.packages[i];
    SystemFolderItem item{.name = file, .path = system_folder_path(folder, file), .db = db};
    item.opened = i < drop_ins.used();
    item.why_not_used =
        item.opened ? why_package_not_used(item, keys, env) : drop_in_not_used_reason(db);
    items.push_back(std::move(item));
  }
  for (const auto& [other, why] : drop_ins.not_packages) {
    const std::string file = name + "/" + other;
    items.push_back(
        {.name = file, .path = system_folder_path(folder, file), .db = db, .why_not_used = why});
  }
}

}  // namespace

std::string drop_in_not_used_reason(std::string_view db) {
  return "the system tier uses the first " + std::to_string(kMostDropIns) + " drop-ins of " +
         std::string(db) + " in name order, and this one comes after them";
}

std::string system_folder_path(const std::string& folder, std::string_view name) {
  if (folder.empty() || folder.ends_with('/')) return folder + std::string(name);
  return folder + "/" + std::string(name);
}

std::string drop_in_folder_of(const std::string& folder, std::string_view db) {
  return system_folder_path(folder, std::string(db) + std::string(kDropInFolderSuffix));
}

std::string system_package_path(const std::string& folder, const std::string& db,
                                const std::string& drop_in) {
  if (drop_in.empty()) return system_folder_path(folder, db + std::string(kPackageSuffix));
  return system_folder_path(drop_in_folder_of(folder, db), drop_in + std::string(kPackageSuffix));
}

std::optional<SystemFolderName> system_folder_name(std::string_view name) {
  for (const auto& [suffix, drop_ins] :
       {std::pair(kPackageSuffix, false), std::pair(kDropInFolderSuffix, true)}) {
    if (name.size() > suffix.size() && name.ends_with(suffix)) {
      return SystemFolderName{std::string(name.substr(0, name.size() - suffix.size())), drop_ins};
    }
  }
  return std::nullopt;
}

Result<std::vector<std::string>> list_system_databases(const std::string& folder, const Env& env) {
  auto entries = env.list_dir(folder);
  if (!entries) {
    if (entries.status().code() == StatusCode::kNotFound) return std::vector<std::string>();
    return entries.status();
  }
  // A folder named *.kdb too (verify reports it), and a database that has
  // drop-ins alone.
  std::set<std::string> names;
  for (const auto& entry : *entries) {
    if (auto named = system_folder_name(entry.name)) names.insert(std::move(named->db));
  }
  return std::vector<std::string>(names.begin(), names.end());
}

DropInFolder read_drop_in_folder(const std::string& path, const Env& env) {
  DropInFolder folder;
  auto entries = env.list_dir(path);
  if (!entries) {
    if (entries.status().code() != StatusCode::kNotFound) {
      folder.problem = DropInFolder::Problem::kUnreadable;
      folder.unreadable_why = entries.status().message();
    } else if (env.file_info(path)) {  // there (lstat), but not a folder to list
      folder.problem = DropInFolder::Problem::kNotAFolder;
    }
    return folder;
  }
  for (const auto& entry : *entries) {
    if (!is_drop_in_package(entry.name)) continue;
    // Looked at itself (lstat): a link is not taken for what it names.
    auto info = env.file_info(path + "/" + entry.name);
    if (!info) {
      if (info.status().code() == StatusCode::kNotFound) continue;  // removed meanwhile
      folder.not_packages.emplace_back(entry.name,
                                       "cannot be looked at: " + info.status().message());
      continue;
    }
    if (std::string why = not_a_package_reason(info->type); !why.empty()) {
      folder.not_packages.emplace_back(entry.name, std::move(why));
    } else {
      folder.packages.push_back(entry.name);
    }
  }
  std::sort(folder.packages.begin(), folder.packages.end());
  std::sort(folder.not_packages.begin(), folder.not_packages.end());
  return folder;
}

std::string drop_in_folder_problem(const std::string& path, const DropInFolder& listed) {
  if (listed.problem == DropInFolder::Problem::kNotAFolder) {
    return "System database drop-in folder " + path + " is not a folder";
  }
  return "System database drop-in folder " + path + " cannot be read: " + listed.unreadable_why;
}

SystemFolder describe_system_folder(const std::string& folder,
                                    const std::vector<std::string>& trusted_keys, const Env& env) {
  SystemFolder described;
  auto entries = env.list_dir(folder);
  described.problem = folder_problem(folder, entries.status(), env);
  if (!entries) return described;
  const TrustedKeys keys = TrustedKeys::load(trusted_keys, env);
  std::vector<SystemFolderItem>& items = described.items;
  for (const auto& entry : *entries) {
    auto named = system_folder_name(entry.name);
    if (!named) continue;
    if (named->drop_in_folder) {
      add_drop_ins(folder, entry.name, named->db, keys, env, items);
      continue;
    }
    SystemFolderItem item{.name = entry.name,
                          .path = system_folder_path(folder, entry.name),
                          .db = named->db,
                          .opened = true};
    item.why_not_used = why_package_not_used(item, keys, env);
    items.push_back(std::move(item));
  }
  // By database, each database's own package ("x.kdb", a prefix of its
  // drop-ins' names) first.
  std::sort(items.begin(), items.end(), [](const SystemFolderItem& a, const SystemFolderItem& b) {
    return std::tie(a.db, a.name) < std::tie(b.db, b.name);
  });
  return described;
}

SystemFolder describe_system_folder(const std::string& folder,
                                    const std::vector<std::string>& trusted_keys) {
  return describe_system_folder(folder, trusted_keys, Env::posix());
}

}  // namespace kcache
