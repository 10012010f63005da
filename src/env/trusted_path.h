// Whether another user could have written what kcache would serve from a
// file (OpenSSH's StrictModes, for packages and the user cache): the
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

// The same rule for a folder kcache writes in (the user cache): the folder
// itself, after links, is held to the rule of the folder holding a file;
// a folder not made yet, to the rule of the folders above one (the
// caller asks again once it is made). Writable by a group that holds
// this user alone (Env::group_is_private) is not writable by others.
std::optional<std::string> untrusted_folder_reason(const std::string& path, const Env& env);

// Why a file untrusted_reason gave `reason` for is refused, in words for
// a refusal: "another user could have written it (<reason>)", or, for a
// link in the file's place, that links there are not followed (a link
// root owns is no one else's, yet it is still not opened).
std::string refusal_words(const std::string& reason);

// The rule for a file the user may name through links (a key file given
// on the command line or in KCACHE_TRUSTED_KEYS): each link on the way is
// held to it as its owner's (owned by root or this user, in folders
// others cannot replace it in: writable by others only with the sticky
// bit), then the file the last one names, as untrusted_reason. nullopt
// when it can be trusted or does not exist.
std::optional<std::string> untrusted_reason_through_links(const std::string& path, const Env& env);

// The rule for a file the user names that kcache appends to, or runs
// commands from (a kernel manifest: KCACHE_RECORD, pack --manifest): the
// links on the way as untrusted_reason_through_links holds them; the file
// owned by root or this user and writable by no one else; the folders
// above it as for any file, but the folder holding it may be writable by
// others when its sticky bit is set (no one else can then replace or
// remove the user's file: a manifest in /tmp is the user's). A file not
// there yet is judged by the folders it would be made in. `real_path`
// gets the path after the links: the one to open, without following a
// link in the file's place, and to judge again once open
// (untrusted_open_file_reason). nullopt when it can be trusted.
std::optional<std::string> untrusted_appended_file_reason(const std::string& path, const Env& env,
                                                          std::string& real_path);

// Why the file at `path` (no link followed), just opened as `opened`,
// cannot be trusted: a link, another file than the one opened, owned by
// another user, or writable by others. With no `opened`, an absent file
// is nullopt (the caller's business), and so is one that is not a regular
// file (a FIFO, a device: the caller refuses to read it).
std::optional<std::string> untrusted_open_file_reason(const std::string& path,
                                                      std::optional<FileId> opened, const Env& env);

}  // namespace kcache
