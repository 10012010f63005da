// Whether another user could have written what kcache would serve from a
// file (OpenSSH's StrictModes, for packages and, later, shared caches): the
// file, the folder holding it and every folder above must be owned by root
// or by the user running kcache and writable by no one else. A folder
// above may be writable by others when its sticky bit is set (as /tmp's
// is): no one but an entry's owner may then rename or remove it. The
// folder holding the file may not be: whoever can write in it can add a
// file. A symbolic link on the way counts as its owner's (it is replaced by
// whoever owns it or its folder), and its target's folders are checked as
// well; the file itself may not be a link (kcache opens files without
// following links).
#pragma once

#include <optional>
#include <string>

#include "env/env.h"

namespace kcache {

// Why `path` cannot be trusted, in words for a warning ("folder /x is
// writable by others (mode 0777)"); nullopt when it can, or when it does
// not exist (absent is the caller's business).
std::optional<std::string> untrusted_reason(const std::string& path, const Env& env);

}  // namespace kcache
