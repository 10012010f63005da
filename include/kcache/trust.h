// kcache: the trust rule for files a user names (OpenSSH's StrictModes,
// docs/design.md §3.3, §11.2), for the tool and any program that hands kcache a
// file to run commands from: a kernel manifest, and the compilers
// `kcache pack` runs for it.
#pragma once

#include <kcache/compiler.h>
#include <kcache/export.h>

#include <optional>
#include <string>
#include <vector>

namespace kcache {

// Why another user could have written, or could replace, the file `path`
// names: a link on the way owned by another user or in a folder they can
// replace it in; the file owned by another user (root is not another) or
// writable by others (its mode, or its ACL); a folder above it writable by
// others without the sticky bit. The folder holding it may be writable by
// others with the sticky bit (no one else can replace the user's file
// there: /tmp). nullopt when it can be trusted, or when it does not exist.
// The rule a kernel manifest is held to (KCACHE_RECORD, `kcache pack`),
// and the programs and libraries pack runs for one.
KCACHE_EXPORT std::optional<std::string> untrusted_file_reason(const std::string& path);

// The files a compiler of `config` runs or loads by name: a command's
// program (found in PATH as the shell finds it), the compiler a wrapper
// such as ccache runs, and every other file its command line names (a
// script given to `sh`); the NVRTC or hipRTC library given as a path.
// Paths are absolute, relative ones found from the current folder (where
// the command would run). Nothing is run or loaded.
KCACHE_EXPORT std::vector<std::string> files_a_compiler_runs(const CompilerConfig& config);

}  // namespace kcache
