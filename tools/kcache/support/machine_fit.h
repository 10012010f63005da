// Whether a package applies to this machine (`kcache info`'s list of the
// system folder): the toolchain of each backend it was packed for, asked
// here, and for OpenCL and CUDA this machine's devices.
#pragma once

#include <kcache/package.h>

#include <string>

namespace kcache::tool {

// Why a package the system tier uses (describe_system_folder), found as
// database `db`, does not apply to this machine: a toolchain here does
// not take its target, or this machine's OpenCL or CUDA devices are
// others. Empty when it applies, or may; `note` then says what could not
// be checked here (no toolchain, no device that answers).
std::string why_not_on_this_machine(const PackageInfo& info, const std::string& db,
                                    std::string* note);

}  // namespace kcache::tool
