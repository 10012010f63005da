// A stand-in for the NVIDIA driver (libcuda.so.1), built with that soname
// so the CUDA loader (src/cuda/module_loader.cpp) runs without a GPU: on
// CI its tests load this library first, and the loader's
// dlopen("libcuda.so.1") gets it (tests/cuda/module_loader_fake_test.cpp).
// It also lets the load benchmark be profiled on a machine with no GPU
// (docs/benchmarks.md).
//
// It holds what the loader relies on, checked as the driver would: a
// module is a CUDA ELF (class 64, machine EM_CUDA) whose size is read from
// its header and copied, a function is a symbol of type FUNC in that ELF's
// symbol table, contexts are made here and a module belongs to the one
// current when it was loaded. Device 0 is compute capability 8.0 with 108
// multiprocessors (an A100: every NVRTC since 11.2 compiles for sm_80).
// The kcache_fake_cuda_* functions script it: refuse the next loads as
// CUDA_ERROR_INVALID_IMAGE, count loads and live modules.
#include <elf.h>

#include <atomic>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <memory>
#include <mutex>
#include <set>
#include <string>
#include <vector>

namespace {

constexpr int kSuccess = 0;
constexpr int kInvalidValue = 1;
constexpr int kNotInitialized = 3;
constexpr int kNoDevice = 100;
constexpr int kInvalidImage = 200;
constexpr int kInvalidContext = 201;
constexpr int kInvalidHandle = 400;
constexpr int kNotFound = 500;
constexpr int kNotSupported = 801;
constexpr std::uint16_t kMachineCuda = 190;  // EM_CUDA

struct Context {
  int device = 0;
};

struct Module {
  Context* context;
  std::vector<unsigned char> image;
  std::set<std::string> functions;
};

std::mutex mutex;
std::atomic<bool> initialized{false};
Context primary;
std::vector<std::unique_ptr<Context>> made_contexts;
std::set<Module*> live;
std::atomic<int> loads{0};
std::atomic<int> refusals{0};
thread_local Context* current = nullptr;

bool known_context(Context* c) {
  if (c == &primary) return true;
  for (const auto& made : made_contexts) {
    if (made.get() == c) return true;
  }
  return false;
}

// The FUNC symbols of a CUDA ELF image, read from its header on: false
// when it is not one.
bool read_image(const unsigned char* bytes, Module& module) {
  if (std::memcmp(bytes, ELFMAG, SELFMAG) != 0 || bytes[EI_CLASS] != ELFCLASS64) return false;
  Elf64_Ehdr header;
  std::memcpy(&header, bytes, sizeof header);
  if (header.e_machine != kMachineCuda || header.e_shentsize != sizeof(Elf64_Shdr)) return false;
  std::uint64_t size = header.e_shoff + std::uint64_t{header.e_shnum} * header.e_shentsize;
  std::vector<Elf64_Shdr> sections(header.e_shnum);
  std::memcpy(sections.data(), bytes + header.e_shoff, header.e_shnum * sizeof(Elf64_Shdr));
  for (const auto& section : sections) {
    if (section.sh_type != SHT_NOBITS) size = std::max(size, section.sh_offset + section.sh_size);
  }
  module.image.assign(bytes, bytes + size);
  const unsigned char* image = module.image.data();
  for (const auto& section : sections) {
    if (section.sh_type != SHT_SYMTAB || section.sh_link >= sections.size()) continue;
    const Elf64_Shdr& names = sections[section.sh_link];
    for (std::uint64_t at = 0; at + sizeof(Elf64_Sym) <= section.sh_size; at += sizeof(Elf64_Sym)) {
      Elf64_Sym symbol;
      std::memcpy(&symbol, image + section.sh_offset + at, sizeof symbol);
      if (ELF64_ST_TYPE(symbol.st_info) != STT_FUNC || symbol.st_name >= names.sh_size) continue;
      const char* name = reinterpret_cast<const char*>(image + names.sh_offset + symbol.st_name);
      module.functions.insert(std::string(name, strnlen(name, names.sh_size - symbol.st_name)));
    }
  }
  return true;
}

}  // namespace

extern "C" {

// KCACHE_FAKE_CUDA_INIT_LOG=FILE: each cuInit appends a line saying which
// GPUs its process was let see ("CUDA_VISIBLE_DEVICES=<value>", or
// "CUDA_VISIBLE_DEVICES unset"): what a program, or a compiler that starts
// the driver itself (NVRTC 13), asked the driver for.
int cuInit(unsigned flags) {
  if (const char* log = std::getenv("KCACHE_FAKE_CUDA_INIT_LOG")) {
    const char* visible = std::getenv("CUDA_VISIBLE_DEVICES");
    const std::string line = visible ? "CUDA_VISIBLE_DEVICES=" + std::string(visible) + "\n"
                                     : "CUDA_VISIBLE_DEVICES unset\n";
    if (std::FILE* file = std::fopen(log, "a")) {
      std::fputs(line.c_str(), file);
      std::fclose(file);
    }
  }
  if (flags != 0) return kInvalidValue;
  // As the driver: no GPU may be seen, so none is found.
  if (const char* visible = std::getenv("CUDA_VISIBLE_DEVICES"); visible && *visible == '\0') {
    return kNoDevice;
  }
  initialized = true;
  return kSuccess;
}

// NVRTC 13 looks for a driver's private tables when libcuda.so.1 is
// loaded; this one has none, as a driver too old for them would answer.
int cuGetExportTable(const void** table, const void* /*id*/) {
  *table = nullptr;
  return kNotSupported;
}

int cuGetErrorString(int error, const char** text) {
  switch (error) {
    case kSuccess:
      *text = "no error";
      break;
    case kNoDevice:
      *text = "no CUDA-capable device is detected";
      break;
    case kInvalidImage:
      *text = "device kernel image is invalid";
      break;
    case kInvalidContext:
      *text = "invalid device context";
      break;
    case kNotFound:
      *text = "named symbol not found";
      break;
    default:
      *text = "fake driver error";
      break;
  }
  return kSuccess;
}

int cuDeviceGet(int* device, int ordinal) {
  if (!initialized) return kNotInitialized;
  if (ordinal != 0) return kInvalidValue;
  *device = 0;
  return kSuccess;
}

int cuDeviceGetCount(int* count) {
  if (!initialized) return kNotInitialized;
  *count = 1;
  return kSuccess;
}

int cuDeviceGetAttribute(int* value, int attribute, int device) {
  if (device != 0) return kInvalidValue;
  switch (attribute) {
    case 16:
      *value = 108;
      return kSuccess;  // multiprocessors
    case 75:
      *value = 8;
      return kSuccess;  // compute capability, major
    case 76:
      *value = 0;
      return kSuccess;  // minor
    default:
      return kInvalidValue;
  }
}

int cuDevicePrimaryCtxRetain(void** context, int device) {
  if (!initialized) return kNotInitialized;
  if (device != 0) return kInvalidValue;
  *context = &primary;
  return kSuccess;
}

int cuCtxGetCurrent(void** context) {
  *context = current;
  return kSuccess;
}

int cuCtxSetCurrent(void* context) {
  std::lock_guard lock(mutex);
  auto* c = static_cast<Context*>(context);
  if (c != nullptr && !known_context(c)) return kInvalidContext;
  current = c;
  return kSuccess;
}

int cuCtxGetDevice(int* device) {
  if (current == nullptr) return kInvalidContext;
  *device = current->device;
  return kSuccess;
}

int cuModuleLoadData(void** module, const void* image) {
  if (current == nullptr) return kInvalidContext;
  if (image == nullptr) return kInvalidValue;
  ++loads;
  for (int left = refusals.load(); left > 0;) {
    if (refusals.compare_exchange_weak(left, left - 1)) return kInvalidImage;
  }
  auto made = std::make_unique<Module>();
  made->context = current;
  if (!read_image(static_cast<const unsigned char*>(image), *made)) return kInvalidImage;
  std::lock_guard lock(mutex);
  *module = made.get();
  live.insert(made.release());
  return kSuccess;
}

int cuModuleGetFunction(void** function, void* module, const char* name) {
  std::lock_guard lock(mutex);
  auto* m = static_cast<Module*>(module);
  if (!live.contains(m)) return kInvalidHandle;
  if (m->context != current) return kInvalidContext;
  auto found = m->functions.find(name);
  if (found == m->functions.end()) return kNotFound;
  *function = const_cast<std::string*>(&*found);  // stable while the module lives
  return kSuccess;
}

int cuModuleUnload(void* module) {
  std::lock_guard lock(mutex);
  auto* m = static_cast<Module*>(module);
  if (live.erase(m) == 0) return kInvalidHandle;
  if (m->context != current) {  // the driver unloads in the module's context
    live.insert(m);
    return kInvalidContext;
  }
  delete m;
  return kSuccess;
}

// The script.
void* kcache_fake_cuda_new_context() {
  std::lock_guard lock(mutex);
  return made_contexts.emplace_back(std::make_unique<Context>()).get();
}
void kcache_fake_cuda_refuse_loads(int count) { refusals = count; }
int kcache_fake_cuda_loads() { return loads; }
int kcache_fake_cuda_live_modules() {
  std::lock_guard lock(mutex);
  return static_cast<int>(live.size());
}
// The name a function handle stands for (the symbol it was found by).
const char* kcache_fake_cuda_function_name(void* function) {
  return static_cast<const std::string*>(function)->c_str();
}

}  // extern "C"
