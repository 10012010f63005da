// The system folder as the system tier reads it: which names in it are
// packages of which database, which drop-ins of a database it uses, and,
// for tools, whether it uses each package and why not
// (describe_system_folder, kcache/package.h). The one reader of that
// folder: the tier asks these, and so does `kcache info` and `install`.
//
// A database's package is "<db>.kdb"; other libraries' packages for its
// target are its drop-ins, the regular files "<db>.kdb.d/<name>.kdb", of
// which the first kMostDropIns in the byte order of their names are used.
#pragma once

#include <kcache/package.h>

#include <algorithm>
#include <cstddef>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "env/env.h"

namespace kcache {

inline constexpr std::string_view kDropInFolderSuffix = ".kdb.d";
// At most this many drop-ins a database are used (each is held open: a
// bound on a program's file descriptors); the others are said and passed
// over.
inline constexpr std::size_t kMostDropIns = 64;

// Why a drop-in of `db` past those is not used, in the words of the
// tier's verify, `kcache info` and `kcache install`.
std::string drop_in_not_used_reason(std::string_view db);

// `name` in `folder`: "<folder>/<name>" (`name` alone when `folder` is
// empty, one '/' when it ends with one).
std::string system_folder_path(const std::string& folder, std::string_view name);

// The folder of `db`'s drop-ins in `folder`: "<folder>/<db>.kdb.d".
std::string drop_in_folder_of(const std::string& folder, std::string_view db);

// What a name in the system folder is to the tier: "<db>.kdb", the
// database's package (whatever file it is), or "<db>.kdb.d", its drop-in
// folder. nullopt for any other name.
struct SystemFolderName {
  std::string db;
  bool drop_in_folder = false;
};
std::optional<SystemFolderName> system_folder_name(std::string_view name);

// The databases `folder` holds a package or a drop-in folder of, each
// once, in byte order; none when the folder is not there. An error when it
// cannot be listed.
Result<std::vector<std::string>> list_system_databases(const std::string& folder, const Env& env);

// A drop-in folder as the tier reads it. A drop-in package is a regular
// file named as one ("*.kdb", not hidden: ".x.kdb" is an install's
// temporary), looked at itself, never through a link. Anything else so
// named (a folder, a FIFO or device, a symbolic link) is never opened and
// takes none of the kMostDropIns places; it is listed apart, with why.
struct DropInFolder {
  // Why none of its packages can be told apart, when none can.
  enum class Problem { kNone, kNotAFolder, kUnreadable };
  Problem problem = Problem::kNone;
  std::string unreadable_why;  // with kUnreadable: the listing's error

  std::vector<std::string> packages;  // file names, in byte order
  // Each other thing named as a package, and why it is not one ("a
  // folder, not a package file"), in byte order of their names.
  std::vector<std::pair<std::string, std::string>> not_packages;

  // How many of `packages` the tier uses: the first ones, kMostDropIns
  // at most.
  [[nodiscard]] std::size_t used() const { return std::min(packages.size(), kMostDropIns); }
};
// The drop-in folder at `path`. One that is not there holds nothing.
DropInFolder read_drop_in_folder(const std::string& path, const Env& env);

// Why the packages of the drop-in folder at `path`, read as `listed`,
// cannot be told apart (listed.problem is not kNone), in the words of the
// tier's warning and of its verify.
std::string drop_in_folder_problem(const std::string& path, const DropInFolder& listed);

// describe_system_folder (kcache/package.h) through `env`.
SystemFolder describe_system_folder(const std::string& folder,
                                    const std::vector<std::string>& trusted_keys, const Env& env);

}  // namespace kcache
