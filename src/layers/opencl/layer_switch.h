// KCACHE_LAYER_DISABLE: the layer's off switch, read by both of its parts
// (opencl_layer.cpp, pocl_private_folder.cpp) the same way.
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
