// The private POCL_CACHE_DIR the OpenCL layer gives a process when PoCL's
// cache is off (pocl_private_folder.cpp says why).
#pragma once

#include <string>

namespace kcache::layer {

// The folder, or "" when the process has none (PoCL's cache on, the layer
// off, the folder refused): set before main, never changed after.
const std::string& pocl_private_folder();

}  // namespace kcache::layer
