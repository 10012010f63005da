// KCACHE_LAYER_DISABLE: the drop-in layers' off switch, read by each of their parts
// (the OpenCL layer's two, the NVRTC shim) the same way.
#pragma once

#include <cstdlib>
#include <cstring>

namespace kcache::layer {

// Set to anything but "" or "0": every call is the real one.
inline bool layer_disabled() {
  const char* value = std::getenv("KCACHE_LAYER_DISABLE");
  return value != nullptr && value[0] != '\0' && std::strcmp(value, "0") != 0;
}

}  // namespace kcache::layer
