// The dlsym layer's routes (dlsym_layer.cpp says what the layer is): for a
// symbol a program looked up and found in a real NVRTC or OpenCL ICD
// loader, what the program gets in its place. Each route is called from
// inside a dlsym, possibly in a library's constructor under the loader's
// lock, so it takes no lock of its own around a call into the loader.
#pragma once

#include <optional>
#include <string>

namespace kcache::layer {

// A lookup the loader answered (dlsym(handle, name) found `found`).
struct Lookup {
  void* handle = nullptr;  // as the program gave it (RTLD_DEFAULT or a handle)
  const char* name = nullptr;
  void* found = nullptr;
  const char* file = nullptr;  // the object that defines `found` (dladdr's dli_fname)
  // The handle is of a link namespace of its own (dlmopen): kcache's layers
  // are in the first namespace only.
  bool other_namespace = false;
};

// What the program gets for `lookup`: a symbol of a stand-in, or nullptr
// for a function the stand-in does not have (with dlerror's message set);
// nullopt when the loader's own answer stands (not an NVRTC, kcache cannot
// serve it: said once).
std::optional<void*> route_nvrtc(const Lookup& lookup);
// The same for the OpenCL layer's functions found in an ICD loader.
std::optional<void*> route_opencl(const Lookup& lookup);

// The loader's dlsym (the next after this layer's), for the routes' own
// lookups: never this layer's own.
void* next_dlsym(void* handle, const char* name);
// The folder this layer was loaded from (canonical), where libkcache, the
// OpenCL layer and kcache/nvrtc/ are (layer_files.h); "" when unknown.
const std::string& layer_folder();
// Says `text` as "kcache: Warning [Layer] <text>", once per `key` in the
// process, unless KCACHE_LOG_LEVEL silences warnings.
void warn_once(const std::string& key, const std::string& text);

}  // namespace kcache::layer
