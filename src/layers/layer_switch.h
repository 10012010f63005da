// KCACHE_LAYER_DISABLE: the drop-in layers' off switch, read by each of their parts
// (the OpenCL layer's two, the NVRTC shim) the same way. A row of the
// settings table (layer_disable, which `kcache info` shows), read here
// from the program's own environment.
#pragma once

#include <cstdlib>
#include <cstring>

#include "base/setting_variables.h"

namespace kcache::layer {

// Set to anything but "" or "0": every call is the real one.
inline bool layer_disabled() {
  const char* value = std::getenv(kLayerDisableVariable);
  return value != nullptr && value[0] != '\0' && std::strcmp(value, "0") != 0;
}

}  // namespace kcache::layer
