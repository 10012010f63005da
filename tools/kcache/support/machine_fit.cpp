#include "support/machine_fit.h"

#include <kcache/compiler.h>

#include <dlfcn.h>

#include <map>
#include <memory>
#include <set>
#include <vector>

namespace kcache::tool {
namespace {

// The compiler of `backend` on this machine, made once (nullptr when it
// cannot be made here: its runtime is missing, or it needs a command).
const Compiler* local_compiler(const std::string& backend) {
  static std::map<std::string, std::unique_ptr<Compiler>> made;
  auto [it, added] = made.try_emplace(backend);
  if (added && backend != "command") {
    CompilerConfig config;
    config.backend = backend;
    if (auto compiler = make_compiler(config)) it->second = std::move(*compiler);
  }
  return it->second.get();
}

// This machine's CUDA devices as the targets the CUDA loader asks for
// ("sm_80_108"), from the driver, loaded at run time as the loader loads
// it; none without a driver or a device.
const std::vector<Target>& cuda_devices() {
  static const std::vector<Target> devices = [] {
    std::vector<Target> found;
    void* driver = ::dlopen("libcuda.so.1", RTLD_NOW | RTLD_LOCAL);
    if (driver == nullptr) return found;
    auto init = reinterpret_cast<int (*)(unsigned)>(::dlsym(driver, "cuInit"));
    auto count_of = reinterpret_cast<int (*)(int*)>(::dlsym(driver, "cuDeviceGetCount"));
    auto device_of = reinterpret_cast<int (*)(int*, int)>(::dlsym(driver, "cuDeviceGet"));
    auto attribute =
        reinterpret_cast<int (*)(int*, int, int)>(::dlsym(driver, "cuDeviceGetAttribute"));
    int count = 0;
    if (!init || !count_of || !device_of || !attribute || init(0) != 0 || count_of(&count) != 0) {
      return found;
    }
    for (int i = 0; i < count; ++i) {
      int device = 0, major = 0, minor = 0, units = 0;
      if (device_of(&device, i) != 0 || attribute(&major, 75, device) != 0 ||
          attribute(&minor, 76, device) != 0 || attribute(&units, 16, device) != 0) {
        continue;
      }
      found.push_back(Target{"sm_" + std::to_string(major * 10 + minor), "", units});
    }
    return found;
  }();
  return devices;
}

// Why a CUDA package for `db` does not fit this machine's devices (empty
// when one of them is its target); `note` says when none could be asked.
std::string why_not_these_gpus(const std::string& db, std::vector<std::string>& notes) {
  if (!db.starts_with("sm_")) return {};  // PTX (compute_NN): the driver compiles it for any
  const auto& devices = cuda_devices();
  if (devices.empty()) {
    notes.push_back("no CUDA device answers here, so its target " + db + " is not checked");
    return {};
  }
  std::string names;
  for (const auto& device : devices) {
    if (device.db_basename() == db || device.arch_basename() == db) return {};
    names += (names.empty() ? "" : ", ") + device.db_basename();
  }
  return "it is for " + db + ", and this machine's CUDA devices are " + names;
}

}  // namespace

std::string why_not_on_this_machine(const PackageInfo& info, const std::string& db,
                                    std::string* note) {
  std::set<std::string> backends;
  for (const auto& [name, value] : info.metadata) {
    if (name == "compiler") backends.insert(value.substr(0, value.find(" | ")));
  }
  std::vector<std::string> unchecked;
  std::vector<std::string> notes;
  for (const auto& backend : backends) {
    if (backend == "command") {  // no toolchain to ask: a command's targets are its own
      notes.push_back("not checked for command (its targets are its command's own)");
      continue;
    }
    const Compiler* compiler = local_compiler(backend);
    if (compiler == nullptr) {
      unchecked.push_back(backend);
      continue;
    }
    if (std::string unfit = package_unfit_reason(info, db, compiler->identity()); !unfit.empty()) {
      return unfit;
    }
    if (backend == "opencl") {
      auto device = compiler->resolve_target(Target{});
      if (device && device->db_basename() != db && device->arch_basename() != db) {
        return "it is for " + db + ", and this machine's OpenCL device is " + device->db_basename();
      }
    }
    if (backend == "nvrtc") {
      if (std::string unfit = why_not_these_gpus(db, notes); !unfit.empty()) return unfit;
    }
    if (backend == "hip") {  // the toolchain is asked, not the GPU (design.md §3)
      notes.push_back("no AMD GPU is asked here, so its target " + db + " is not checked");
    }
  }
  std::string list;
  for (const auto& b : unchecked) list += (list.empty() ? "" : ", ") + b;
  if (!list.empty()) {
    notes.push_back("not checked here for " + list + " (its toolchain cannot be started here)");
  }
  for (const auto& one : notes) *note += (note->empty() ? "" : "; ") + one;
  return {};
}

}  // namespace kcache::tool
