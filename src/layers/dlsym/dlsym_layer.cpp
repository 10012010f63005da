// libkcache_dlsym_layer.so: the drop-in layers for programs that open NVRTC
// or the OpenCL ICD loader themselves (dlopen by soname or by path: a
// wheel's nvidia/cuda_nvrtc/lib/libnvrtc.so.12, ctypes, cuda-python) and
// look its functions up on that handle. A preload reaches only the global
// scope, and a lookup on the handle searches that library alone, so such a
// program got the real functions and no compile was served. Preloaded by
// `kcache run`, this layer defines `dlsym`: a lookup that the loader
// answers with a function of a real NVRTC gets the NVRTC stand-in's of its
// version, told to forward to that very library (routes.h,
// nvrtc_route.cpp); one answered by an ICD loader gets the OpenCL layer's
// function of that name, where it has one (opencl_route.cpp).
// docs/design.md §10.3 says why dlsym and not dlopen, and the limits.
//
// Everything else is the loader's own answer, from the loader's own call
// with the program's return address (the trampoline at the end jumps to
// it), so RTLD_NEXT, RTLD_DEFAULT's caller scope and dlerror behave as
// they do without kcache. kcache's own objects (libkcache, the stand-ins,
// the layers) always get the loader's answer: they look the real
// functions up.
#include <dlfcn.h>
#include <kcache/options.h>
#include <link.h>

#include <atomic>
#include <climits>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <mutex>
#include <set>
#include <string>
#include <string_view>

#include "layers/dlsym/routes.h"
#include "layers/layer_files.h"
#include "layers/layer_switch.h"

// The loader's dlsym and dlopen, which the trampolines jump to: set by the
// first call of each (the trampoline calls this layer first), read by the
// trampolines.
extern "C" {
__attribute__((visibility("hidden"))) void* kcache_next_dlsym = nullptr;
__attribute__((visibility("hidden"))) void* kcache_next_dlopen = nullptr;
}

namespace kcache::layer {
namespace {

using Dlsym = void* (*)(void*, const char*);

// The next dlsym after this layer's (libc's, or another preload's), found
// with libc's dlvsym, which this layer does not define.
Dlsym loader_dlsym() {
  void* next = __atomic_load_n(&kcache_next_dlsym, __ATOMIC_ACQUIRE);
  if (next == nullptr) {
    next = ::dlvsym(RTLD_NEXT, "dlsym", "GLIBC_2.34");
    if (next == nullptr) next = ::dlvsym(RTLD_NEXT, "dlsym", "GLIBC_2.2.5");
    if (next == nullptr) {
      std::fputs("kcache: Error [Layer] the C library's dlsym cannot be found\n", stderr);
      std::abort();
    }
    __atomic_store_n(&kcache_next_dlsym, next, __ATOMIC_RELEASE);
  }
  return reinterpret_cast<Dlsym>(next);
}

// The next dlopen after this layer's, found as the dlsym.
void loader_dlopen() {
  if (__atomic_load_n(&kcache_next_dlopen, __ATOMIC_ACQUIRE) != nullptr) return;
  void* next = ::dlvsym(RTLD_NEXT, "dlopen", "GLIBC_2.34");
  if (next == nullptr) next = ::dlvsym(RTLD_NEXT, "dlopen", "GLIBC_2.2.5");
  if (next == nullptr) {
    std::fputs("kcache: Error [Layer] the C library's dlopen cannot be found\n", stderr);
    std::abort();
  }
  __atomic_store_n(&kcache_next_dlopen, next, __ATOMIC_RELEASE);
}

// dlopen(NULL)'s handle, whose lookups search the global scope as
// RTLD_DEFAULT's do (found once; race-free to find twice).
std::atomic<void*> main_program{nullptr};

void* main_program_handle() {
  void* handle = main_program.load(std::memory_order_acquire);
  if (handle == nullptr) {
    handle = ::dlopen(nullptr, RTLD_LAZY | RTLD_NOLOAD);
    main_program.store(handle, std::memory_order_release);
  }
  return handle;
}

std::string_view base_name(std::string_view path) {
  const std::size_t slash = path.rfind('/');
  return slash == std::string_view::npos ? path : path.substr(slash + 1);
}

enum class Family { kNone, kNvrtc, kOpenCl };

// The families of functions routed: NVRTC's (what its stand-ins export)
// and OpenCL's API ("cl" and a capital: not close or clock_gettime).
Family family_of(const char* name) {
  if (std::strncmp(name, "nvrtc", 5) == 0 || std::strcmp(name, "__nvrtcCPEx") == 0) {
    return Family::kNvrtc;
  }
  if (name[0] == 'c' && name[1] == 'l' && name[2] >= 'A' && name[2] <= 'Z') {
    return Family::kOpenCl;
  }
  return Family::kNone;
}

// The folder, published once without a lock (two threads may both compute
// it; one copy is kept): a lock held here while dladdr waits for the
// loader's lock could deadlock with a constructor that calls dlsym.
std::atomic<const std::string*> folder_found{nullptr};

const std::string* find_folder() {
  Dl_info info{};
  std::string folder;
  char resolved[PATH_MAX];
  if (::dladdr(reinterpret_cast<void*>(&find_folder), &info) != 0 && info.dli_fname != nullptr &&
      ::realpath(info.dli_fname, resolved) != nullptr) {
    folder = resolved;
    folder.erase(folder.rfind('/'));
  }
  auto* made = new std::string(std::move(folder));  // never freed: lookups outlive exit
  const std::string* none = nullptr;
  if (folder_found.compare_exchange_strong(none, made, std::memory_order_acq_rel)) return made;
  delete made;
  return none;
}

// Whether warnings are said: KCACHE_LOG_LEVEL as the cache reads it
// (resolved once; -1 until then).
std::atomic<int> warnings_said{-1};

bool says_warnings() {
  int said = warnings_said.load(std::memory_order_acquire);
  if (said < 0) {
    said = resolve_config(CacheOptions{}).log_level >= LogLevel::kWarning ? 1 : 0;
    warnings_said.store(said, std::memory_order_release);
  }
  return said == 1;
}

// Before the program runs (this layer is preloaded): what the first lookup
// needs, found while there is one thread.
__attribute__((constructor)) void prepare() {
  loader_dlsym();
  loader_dlopen();
  layer_folder();
  main_program_handle();
}

}  // namespace

bool nvrtc_stand_in(std::string_view file) {
  const std::string folder = std::string("/") + kNvrtcStandInFolder + "/";
  const std::size_t at = file.rfind(folder);
  return at != std::string_view::npos &&
         file.find('/', at + folder.size()) == std::string_view::npos &&
         base_name(file).starts_with("libnvrtc.so.");
}

bool of_kcache(std::string_view file) {
  return base_name(file).starts_with("libkcache") || nvrtc_stand_in(file);
}

void* not_found(const char* name) {
  // A lookup in this layer's own scope (libkcache and the C++ runtime),
  // where no NVRTC or OpenCL function is. Its handle is kept (a dlclose
  // after the lookup would clear dlerror's message).
  static std::atomic<void*> own{nullptr};
  void* handle = own.load(std::memory_order_acquire);
  if (handle == nullptr) {
    handle = ::dlopen((layer_folder() + "/" + kDlsymLayerFile).c_str(), RTLD_LAZY | RTLD_NOLOAD);
    void* none = nullptr;
    if (handle != nullptr && !own.compare_exchange_strong(none, handle)) {
      ::dlclose(handle);
      handle = none;
    }
  }
  if (handle != nullptr) next_dlsym(handle, name);
  return nullptr;
}

void* next_dlsym(void* handle, const char* name) { return loader_dlsym()(handle, name); }

const std::string& layer_folder() {
  const std::string* folder = folder_found.load(std::memory_order_acquire);
  return folder != nullptr ? *folder : *find_folder();
}

void* load_once(std::atomic<void*>& slot, const std::string& path, std::string& problem) {
  if (void* handle = slot.load(std::memory_order_acquire)) return handle;
  void* handle = ::dlopen(path.c_str(), RTLD_NOW | RTLD_LOCAL);
  if (handle == nullptr) {
    const char* error = ::dlerror();
    problem = error != nullptr ? error : path + " cannot be loaded";
    return nullptr;
  }
  void* none = nullptr;
  if (!slot.compare_exchange_strong(none, handle, std::memory_order_acq_rel)) {
    ::dlclose(handle);  // another thread's open of the same object is kept
    return none;
  }
  return handle;
}

void warn_once(const std::string& key, const std::string& text) {
  if (!says_warnings()) return;
  static std::mutex mutex;                       // constant-initialised: no guard
  static std::set<std::string>* said = nullptr;  // made under `mutex`
  std::lock_guard lock(mutex);
  if (said == nullptr) said = new std::set<std::string>;  // never freed, as the folder
  if (!said->insert(key).second) return;
  std::fprintf(stderr, "kcache: Warning [Layer] %s\n", text.c_str());
}

}  // namespace kcache::layer

// The answer of the routing call to the trampoline, in rax and rdx:
// `answered` 0 means the loader answers (the trampoline jumps to it).
struct DlsymAnswer {
  void* symbol;
  std::uintptr_t answered;
};

extern "C" __attribute__((visibility("hidden"))) DlsymAnswer kcache_dlsym_route(
    void* handle, const char* name, const void* caller) {
  using namespace kcache::layer;
  constexpr DlsymAnswer kLoaderAnswers{nullptr, 0};
  const Dlsym loader = loader_dlsym();  // what the trampoline jumps to, set before it does
  if (handle == RTLD_NEXT || name == nullptr) return kLoaderAnswers;
  const Family family = family_of(name);
  if (family == Family::kNone || layer_disabled()) return kLoaderAnswers;
  Dl_info asking{};
  link_map* asking_object = nullptr;
  if (::dladdr1(caller, &asking, reinterpret_cast<void**>(&asking_object), RTLD_DL_LINKMAP) != 0 &&
      asking.dli_fname != nullptr && of_kcache(asking.dli_fname)) {
    return kLoaderAnswers;
  }
  // The loader's answer, asked from here: for a handle it is the answer the
  // program gets; for RTLD_DEFAULT the global scope comes first for every
  // caller, and a symbol only in the caller's own scope is not found here,
  // so the loader answers that one itself.
  void* found = loader(handle, name);
  if (found == nullptr) return kLoaderAnswers;
  Dl_info defining{};
  link_map* defining_object = nullptr;
  if (::dladdr1(found, &defining, reinterpret_cast<void**>(&defining_object), RTLD_DL_LINKMAP) ==
          0 ||
      defining.dli_fname == nullptr ||
      defining_object == asking_object) {  // a library looking itself up
    return kLoaderAnswers;
  }
  Lookup lookup{handle, name, found, defining.dli_fname};
  if (of_kcache(defining.dli_fname)) {
    const bool global_scope = handle == RTLD_DEFAULT || handle == main_program_handle();
    if (family != Family::kNvrtc || !global_scope || !nvrtc_stand_in(defining.dli_fname)) {
      return kLoaderAnswers;
    }
    const auto routed = route_global_stand_in(lookup);
    if (!routed) return kLoaderAnswers;
    if (*routed != nullptr) ::dlerror();
    return {*routed, 1};
  }
  Lmid_t namespace_id = LM_ID_BASE;
  lookup.other_namespace = handle != RTLD_DEFAULT &&
                           ::dlinfo(handle, RTLD_DI_LMID, &namespace_id) == 0 &&
                           namespace_id != LM_ID_BASE;
  const auto routed = family == Family::kNvrtc ? route_nvrtc(lookup) : route_opencl(lookup);
  if (!routed) return kLoaderAnswers;
  if (*routed != nullptr) ::dlerror();  // the routes' own probes are not the program's errors
  return {*routed, 1};
}

// dlopen(file, mode): notes it (routes.h, note_dlopen), then is the
// loader's, as called.
extern "C" __attribute__((visibility("hidden"))) void kcache_dlopen_note(const char* file,
                                                                         int mode) {
  kcache::layer::loader_dlopen();
  if (!kcache::layer::layer_disabled()) kcache::layer::note_dlopen(file, mode);
}

// dlsym(handle, name): asks kcache_dlsym_route (with the caller's return
// address); when it answers, returns its symbol, else jumps to the loader's
// dlsym with the arguments and return address as they came, so that the
// loader sees the program's call and not this layer's. dlopen: the same
// after kcache_dlopen_note, always the loader's. x86-64 only, as the NVRTC
// shim.
#if defined(__x86_64__)
asm(R"(
  .text
  .globl dlsym
  .type dlsym, @function
dlsym:
  .cfi_startproc
  pushq %rdi
  .cfi_adjust_cfa_offset 8
  pushq %rsi
  .cfi_adjust_cfa_offset 8
  subq $8, %rsp
  .cfi_adjust_cfa_offset 8
  movq 24(%rsp), %rdx
  call kcache_dlsym_route
  addq $8, %rsp
  .cfi_adjust_cfa_offset -8
  popq %rsi
  .cfi_adjust_cfa_offset -8
  popq %rdi
  .cfi_adjust_cfa_offset -8
  testq %rdx, %rdx
  jz 1f
  ret
1:
  jmpq *kcache_next_dlsym(%rip)
  .cfi_endproc
  .size dlsym, .-dlsym

  .globl dlopen
  .type dlopen, @function
dlopen:
  .cfi_startproc
  pushq %rdi
  .cfi_adjust_cfa_offset 8
  pushq %rsi
  .cfi_adjust_cfa_offset 8
  subq $8, %rsp
  .cfi_adjust_cfa_offset 8
  call kcache_dlopen_note
  addq $8, %rsp
  .cfi_adjust_cfa_offset -8
  popq %rsi
  .cfi_adjust_cfa_offset -8
  popq %rdi
  .cfi_adjust_cfa_offset -8
  jmpq *kcache_next_dlopen(%rip)
  .cfi_endproc
  .size dlopen, .-dlopen
)");
#else
#error "the dlsym layer's trampoline is written for x86-64"
#endif
