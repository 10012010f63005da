// The temporary files of atomic writes (`<path>.tmp.<pid>.<n>.<random>`,
// Env::write_file_atomic's) that a writer killed by SIGKILL left beside
// `<path>`: a package of hundreds of megabytes each time a pack, export or
// merge is killed while it writes.
//
// A temporary is abandoned when its writer is gone (no process has its
// pid: kill(pid, 0) says ESRCH) and it has not been written to for a
// minute: a writer in another pid namespace sharing the folder looks gone
// but keeps writing, and one whose pid was reused looks alive, so its
// file is only kept longer. Only the user's own regular files are
// removed; links and other kinds are left.
#pragma once

#include <chrono>
#include <cstddef>
#include <string>

#include "env/env.h"

namespace kcache {

// How long an abandoned temporary has not been written to before it goes.
inline constexpr std::chrono::seconds kAbandonedTemporaryAge{60};

// Removes the abandoned temporaries of `path` from its folder; returns how
// many. Problems (an unreadable folder, a file that went meanwhile) are
// passed over: this is housekeeping before a write, never its failure.
std::size_t remove_abandoned_temporaries(Env& env, const std::string& path);

}  // namespace kcache
