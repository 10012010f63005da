// How a command says that it failed: "kcache: <text>" on stderr, and the
// exit status 1 (a failure that was said; 2 is a usage error).
#pragma once

#include <string>

namespace kcache::tool {

// Prints "kcache: <text>" on stderr and returns 1.
int report_failure(const std::string& text);

// "<path>: <message>", unless the message names the path already
// ("cannot open <path>: ...").
std::string with_path_named(const std::string& path, const std::string& message);

}  // namespace kcache::tool
