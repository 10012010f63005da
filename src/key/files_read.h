// The files a compile read beyond its request, as the compiler listed them
// (CompileOutput::files_read, e.g. from `-MD -MF`): kept with the entry,
// one metadata field "read" per file, "<sha256:hex> <size> <mtime ns>
// <ctime ns> <device>:<inode> <path>", and checked on every hit, as
// ccache's depend mode checks its manifest. A file whose stamp is the one
// recorded is unchanged (the stamp was recorded only when old enough to
// tell the next edit, as ccache's inode cache trusts it): no read. One
// whose stamp moved is read and its digest compared. A file that changed,
// vanished or cannot be read makes the entry a miss: the kernel is
// compiled again and the new entry replaces it.
#pragma once

#include <kcache/status.h>

#include <string>
#include <vector>

#include "base/field_text.h"
#include "env/env.h"
#include "inputs/file_digests.h"

namespace kcache {

inline constexpr std::string_view kReadField = "read";

// The "read" fields of `files`, read by a compile that started at
// `compile_start_ns` (wall_clock_ns()). kNotSupported (the entry must not
// be stored) when a file cannot be read, or changed too close to the
// compile's start to tell whether the compiler saw that change
// (changed_recently): its digest now may not be what was compiled.
// Files in `rechecked` (the key's own headers, whose content was compared
// again after the compile) need no such guard.
Result<Fields> files_read_fields(const std::vector<std::string>& files,
                                 std::int64_t compile_start_ns,
                                 const std::vector<FileId>& rechecked, const Env& env,
                                 FileDigests& digests);

// Whether every "read" field of `metadata` still names a file with that
// digest; true when there are none.
bool files_read_unchanged(const Fields& metadata, const Env& env, FileDigests& digests);

}  // namespace kcache
