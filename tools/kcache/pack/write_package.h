// kcache pack's last step: the package written from the work folder
// (signed when asked), whole, then renamed into place, and what the pack
// says at its end.
#pragma once

#include "pack/compile_lines.h"
#include "pack/options.h"
#include "pack/plan.h"

namespace kcache::tool {

// Says the lines that did not parse and those that failed, writes the
// package of the kernels compiled (when they went to one database), then
// the summary and where the time went. Returns the pack's exit status: 1
// when a line was skipped or failed, or the package is not as asked.
int write_package(const PackOptions& options, PackPlan& plan, CompiledLines& compiled);

}  // namespace kcache::tool
