// The dlsym layer's OpenCL route (routes.h): a function found in an OpenCL
// ICD loader (libOpenCL.so*) that the OpenCL layer defines is answered with
// the layer's, which forwards to the loader as it does for a program
// linked to it; every other function is the loader's own. The layer is
// loaded here when it was not preloaded. An ICD loaded into a namespace of
// its own is said once and left alone.
#include <dlfcn.h>

#include <atomic>
#include <optional>
#include <string>
#include <string_view>

#include "layers/dlsym/routes.h"
#include "layers/layer_files.h"

namespace kcache::layer {
namespace {

std::atomic<void*> opencl_layer{nullptr};

// The OpenCL layer's handle: the preloaded one, or loaded now from beside
// this layer (local). Kept open.
void* opencl_layer_handle(std::string& problem) {
  return load_once(opencl_layer, layer_folder() + "/" + kOpenClLayerFile, problem);
}

}  // namespace

std::optional<void*> route_opencl(const Lookup& lookup) {
  const std::string_view file = lookup.file;
  if (!file.substr(file.rfind('/') + 1).starts_with("libOpenCL.so")) return std::nullopt;
  if (lookup.other_namespace) {
    warn_once("opencl namespace " + std::string(file),
              "OpenCL calls through " + std::string(file) +
                  " are not cached: it was loaded into a link namespace of its own (dlmopen), "
                  "where kcache's OpenCL layer is not");
    return std::nullopt;
  }
  std::string problem;
  void* layer = opencl_layer_handle(problem);
  if (layer == nullptr) {
    warn_once("opencl layer", "OpenCL calls through " + std::string(file) +
                                  " are not cached: kcache's OpenCL layer cannot be loaded (" +
                                  problem + ")");
    return std::nullopt;
  }
  void* served = next_dlsym(layer, lookup.name);
  if (served == nullptr) return std::nullopt;  // not one the layer serves: the loader's own
  return served;
}

}  // namespace kcache::layer
