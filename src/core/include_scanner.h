// Finds the headers a compile can read, so their content goes into the key.
//
// Follows `#include "x"` and `#include <x>` from the source, recursively,
// resolving each name against the in-memory headers, then (for "x") the
// including file's folder, then the include directories. It ignores #if, so
// it may hash a header the compile skips (a possible extra miss), never the
// other way round (a stale hit). A name it cannot resolve is a toolkit or
// system header, covered by the compiler's version. An include it cannot
// read statically (`#include MACRO`) makes it hash every file under the
// include directories instead.
#pragma once

#include <kcache/key.h>
#include <kcache/status.h>

#include <string>
#include <vector>

#include "env/env.h"

namespace kcache {

struct ScannedHeader {
  std::string name;      // as written in the #include, or a path for a whole-dir hash
  std::string location;  // "memory", or the resolved path
  std::string digest;    // "sha256:<hex>"
};

struct IncludeScan {
  std::vector<ScannedHeader> headers;  // sorted by (name, location)
  // True when an `#include` could not be read statically and the include
  // directories were hashed whole.
  bool hashed_whole_dirs = false;
};

// `toolkit_dirs`: folders whose headers belong to the compiler (covered by
// its version): a name that resolves there first is not hashed or followed.
// kIoError when a header exists but cannot be read (its content would be
// unknown, so no key could be trusted); kInvalidArgument when the scan
// exceeds its limits (10,000 headers, 256 MiB).
Result<IncludeScan> scan_includes(const std::string& source, const std::vector<Header>& memory,
                                  const std::vector<std::string>& include_dirs,
                                  const std::vector<std::string>& toolkit_dirs, const Env& env);

}  // namespace kcache
