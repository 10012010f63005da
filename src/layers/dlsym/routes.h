// The dlsym layer's routes (dlsym_layer.cpp says what the layer is): for a
// symbol a program looked up and found in a real NVRTC or OpenCL ICD
// loader, what the program gets in its place. Each route is called from
// inside a dlsym, possibly in a library's constructor under the loader's
// lock, so it takes no lock of its own around a call into the loader.
#pragma once

#include <atomic>
#include <optional>
#include <string>
#include <string_view>

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
// For an NVRTC function that a lookup in the global scope (RTLD_DEFAULT,
// dlopen(NULL)'s handle) found in a preloaded stand-in (`lookup.file`):
// nullopt when the stand-in answers (the program has an NVRTC of its
// version there: opened RTLD_GLOBAL, or linked to it); else what the
// program would find without the stand-ins, another version's stand-in
// or nullptr (not found, dlerror set). Preloaded for the programs linked to
// NVRTC, a stand-in would otherwise hand a program that looks NVRTC up in
// the global scope before opening its own (cuda.bindings) another NVRTC.
std::optional<void*> route_global_stand_in(const Lookup& lookup);
// Notes a dlopen(file, mode) before the loader does it: NVRTC made global
// (mode has RTLD_GLOBAL) by a stand-in's soname or by a path.
void note_dlopen(const char* file, int mode);

// The loader's dlsym (the next after this layer's), for the routes' own
// lookups: never this layer's own.
void* next_dlsym(void* handle, const char* name);
// The folder this layer was loaded from (canonical), where libkcache, the
// OpenCL layer and kcache/nvrtc/ are (layer_files.h); "" when unknown.
const std::string& layer_folder();
// The object at `path` (one of kcache's, beside this layer), loaded once
// into `slot` (local: the program's global scope is not changed) and kept
// open; a thread that loses the race keeps the other's. nullptr, with
// `problem` set, when it cannot be loaded.
void* load_once(std::atomic<void*>& slot, const std::string& path, std::string& problem);
// Whether `file` is one of kcache's own objects: libkcache and its layers
// (libkcache*), the NVRTC stand-ins (nvrtc_stand_in).
bool of_kcache(std::string_view file);
// Whether `file` is an NVRTC stand-in (<folder>/kcache/nvrtc/libnvrtc.so.<N>).
bool nvrtc_stand_in(std::string_view file);
// nullptr, with dlerror saying that `name` was not found.
void* not_found(const char* name);
// Says `text` as "kcache: Warning [Layer] <text>", once per `key` in the
// process, unless KCACHE_LOG_LEVEL silences warnings.
void warn_once(const std::string& key, const std::string& text);

}  // namespace kcache::layer
