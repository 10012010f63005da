// libkcache_opencl_layer.so: program builds from source served through
// kcache for programs that never call it, loaded with LD_PRELOAD (`kcache
// run` puts it there). docs/design.md §10.1 says how: the application keeps
// the real source program it made; a build of it is served as a "shadow"
// program made from the cached binaries, to which every query of the built
// program goes. A build that fails is answered from kcache's compile of it
// (its status and log), not compiled again. Whatever kcache cannot serve is
// the real call, untouched.
#define CL_TARGET_OPENCL_VERSION 300
#include <CL/cl.h>
#include <dlfcn.h>
#include <kcache/advanced.h>
#include <kcache/cache.h>

#include <algorithm>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <unordered_map>
#include <utility>
#include <vector>

#include "base/mutex.h"
#include "compiler/opencl/opencl_build_failure.h"
#include "layers/layer_cache.h"
#include "layers/layer_switch.h"
#include "layers/logged_compiler.h"
#include "layers/opencl/pocl_binary.h"
#include "layers/opencl/pocl_private_folder.h"

namespace {

// The loader's own entry points, the next definitions after this library's.
struct RealOpenCl {
  decltype(&::clBuildProgram) BuildProgram;
  decltype(&::clCreateProgramWithBinary) CreateProgramWithBinary;
  decltype(&::clGetProgramInfo) GetProgramInfo;
  decltype(&::clGetProgramBuildInfo) GetProgramBuildInfo;
  decltype(&::clReleaseProgram) ReleaseProgram;
  decltype(&::clRetainProgram) RetainProgram;
  decltype(&::clCreateKernel) CreateKernel;
  decltype(&::clCreateKernelsInProgram) CreateKernelsInProgram;
  decltype(&::clCloneKernel) CloneKernel;
  decltype(&::clReleaseKernel) ReleaseKernel;
  decltype(&::clGetKernelInfo) GetKernelInfo;
};

template <class F>
void bind(F& function, const char* name) {
  function = reinterpret_cast<F>(::dlsym(RTLD_NEXT, name));
  if (function != nullptr) return;
  // Not preloaded but loaded after the ICD loader: ask it by name.
  if (void* loader = ::dlopen("libOpenCL.so.1", RTLD_LAZY | RTLD_NOLOAD)) {
    function = reinterpret_cast<F>(::dlsym(loader, name));
  }
}

const RealOpenCl& real() {
  static const RealOpenCl functions = [] {
    RealOpenCl r{};
    bind(r.BuildProgram, "clBuildProgram");
    bind(r.CreateProgramWithBinary, "clCreateProgramWithBinary");
    bind(r.GetProgramInfo, "clGetProgramInfo");
    bind(r.GetProgramBuildInfo, "clGetProgramBuildInfo");
    bind(r.ReleaseProgram, "clReleaseProgram");
    bind(r.RetainProgram, "clRetainProgram");
    bind(r.CreateKernel, "clCreateKernel");
    bind(r.CreateKernelsInProgram, "clCreateKernelsInProgram");
    bind(r.CloneKernel, "clCloneKernel");
    bind(r.ReleaseKernel, "clReleaseKernel");
    bind(r.GetKernelInfo, "clGetKernelInfo");
    return r;
  }();
  return functions;
}

// Every function the layer serves with; without one, nothing is served.
bool complete(const RealOpenCl& r) {
  return r.BuildProgram && r.CreateProgramWithBinary && r.GetProgramInfo && r.GetProgramBuildInfo &&
         r.ReleaseProgram && r.RetainProgram && r.CreateKernel && r.CreateKernelsInProgram &&
         r.ReleaseKernel && r.GetKernelInfo;
}

// A program built from cached binaries, shared by every source program of
// one context, binaries and options that is alive at the same time: PoCL
// 3.1 with its cache off (POCL_KERNEL_CACHE=0) gives all programs made
// from one binary one folder and removes it when any of them is released,
// so two alive at once abort the process at a kernel launch. Its build
// state never changes, so sharing it is invisible. For the same reason
// built programs are made and released with Layer::mutex held: one is
// never released while the next of its binary is being made.
struct Built {
  cl_program program = nullptr;
  std::vector<cl_device_id> devices;          // in the source program's order
  std::vector<std::string> logs;              // the build log of each
  std::vector<kcache::CachedKernel> kernels;  // the binary it was made from, for each
  int users = 0;                              // shadows that use it
};

// A source program's build, served by a built program.
struct Shadow {
  std::string built;  // its key in Layer::built
  int kernels = 0;    // kernels made through it that are alive
};

// A build of a source program that fails, answered from kcache's compile
// of it (or its remembered failure): the program is left unbuilt (its
// kernels, binaries and kernel count are refused as a failed build's are),
// and its build status, log and options are these.
struct FailedBuild {
  cl_device_id device = nullptr;
  std::string log;
  std::string options;
};

// The layer's state: never destroyed, because programs are released from
// static destructors at exit (CLBlast's caches are).
struct Layer {
  std::unique_ptr<kcache::Cache> cache;
  kcache::Mutex mutex;
  std::unordered_map<std::string, Built> built
      GUARDED_BY(mutex);  // context, binaries, options -> built
  std::unordered_map<cl_program, Shadow> shadows GUARDED_BY(mutex);  // source program -> shadow
  std::unordered_map<cl_kernel, cl_program> kernels
      GUARDED_BY(mutex);  // kernel of a shadow -> source
  std::unordered_map<cl_program, FailedBuild> failed
      GUARDED_BY(mutex);  // source program -> its failed build
  // The built program that serves `program`; nullptr when none does.
  const Built* serving(cl_program program) const REQUIRES(mutex) {
    auto it = shadows.find(program);
    if (it == shadows.end()) return nullptr;
    auto b = built.find(it->second.built);
    return b == built.end() ? nullptr : &b->second;
  }
  // One user of the built program `key` less; released after the last.
  void unuse(const std::string& key) REQUIRES(mutex);
};

// Keeps with each entry `built` was made from the work-group code its
// launches made PoCL compile (pocl_binary.h), so that the next process
// compiles none of it again: only where the layer knows PoCL's folder (its
// cache off, a private folder), and only while the program lives (PoCL
// removes its folder at its release). Called with Layer::mutex held.
void keep_work_group_code(kcache::Cache& cache, Built& built) {
  const std::string& folder = kcache::layer::pocl_private_folder();
  if (folder.empty()) return;
  for (kcache::CachedKernel& kernel : built.kernels) {
    auto code = kcache::layer::with_work_group_code(kernel.binary(), folder);
    if (!code) continue;
    auto refined = kcache::AdvancedCache(cache).refine(
        kernel, code->binary, "PoCL work-group code, " + std::to_string(code->files) + " more");
    if (refined) {
      kernel = std::move(*refined);
    } else if (refined.status().code() != kcache::StatusCode::kNotFound) {
      kcache::layer::say_left_to_real(
          cache, "PoCL", "its work-group code is not kept: " + refined.status().to_string());
    }
  }
}

void Layer::unuse(const std::string& key) {
  auto it = built.find(key);
  if (it == built.end() || --it->second.users > 0) return;
  keep_work_group_code(*cache, it->second);
  real().ReleaseProgram(it->second.program);
  built.erase(it);
}

// The layer, or nullptr when it serves nothing (KCACHE_LAYER_DISABLE=1, the
// cache off or not opened, no ICD loader), in which case every call is the
// real one.
Layer* layer() {
  static Layer* const active = []() -> Layer* {
    if (kcache::layer::layer_disabled() || !complete(real())) return nullptr;
    auto cache =
        kcache::layer::open_layer_cache("OpenCL layer", "program builds from source are served");
    if (!cache) return nullptr;
    auto* made = new Layer;  // never deleted: see Layer
    made->cache = std::move(cache);
    // Programs alive at exit (never released, or released by static
    // destructors, which run after this) keep their work-group code too;
    // before the private folder goes (its atexit ran earlier, so runs later).
    std::atexit([] {
      Layer* l = layer();
      // A thread still building holds it: its programs keep what they have.
      if (!l->mutex.try_lock()) return;
      for (auto& [key, built] : l->built) keep_work_group_code(*l->cache, built);
      l->mutex.unlock();
    });
    return made;
  }();
  return active;
}

template <class T>
std::optional<std::vector<T>> program_array(cl_program program, cl_program_info what) {
  std::size_t size = 0;
  if (real().GetProgramInfo(program, what, 0, nullptr, &size) != CL_SUCCESS) return std::nullopt;
  std::vector<T> values(size / sizeof(T));
  if (size != 0 &&
      real().GetProgramInfo(program, what, size, values.data(), nullptr) != CL_SUCCESS) {
    return std::nullopt;
  }
  return values;
}

template <class T>
std::optional<T> program_value(cl_program program, cl_program_info what) {
  T value{};
  if (real().GetProgramInfo(program, what, sizeof value, &value, nullptr) != CL_SUCCESS) {
    return std::nullopt;
  }
  return value;
}

// Whether the release about to be made of `object` drops its last
// reference (`info`: clGetKernelInfo or clGetProgramInfo, `count` the
// matching CL_*_REFERENCE_COUNT).
template <class Info, class Object, class Param>
bool last_reference(Info info, Object object, Param count_param) {
  cl_uint count = 0;
  return info(object, count_param, sizeof count, &count, nullptr) == CL_SUCCESS && count == 1;
}

// A text answer, as OpenCL gives one: with its terminating NUL.
cl_int answer_text(const std::string& text, std::size_t size, void* value, std::size_t* size_ret) {
  const std::size_t needed = text.size() + 1;
  if (value != nullptr) {
    if (size < needed) return CL_INVALID_VALUE;
    std::memcpy(value, text.c_str(), needed);
  }
  if (size_ret != nullptr) *size_ret = needed;
  return CL_SUCCESS;
}

// The binaries of `source` for each device of `devices` in `context`, from
// the cache or compiled by the opencl backend there; nullopt at the first
// that kcache cannot give (the caller then builds for real), with
// `failure_log` set when that is because the platform's build of it fails
// (one device; compiled now or remembered).
struct Served {
  std::vector<kcache::CachedKernel> kernels;
  std::vector<std::string> logs;
};

std::optional<Served> binaries(Layer& l, cl_context context,
                               const std::vector<cl_device_id>& devices, const std::string& source,
                               const char* options, std::optional<std::string>& failure_log) {
  Served served;
  for (cl_device_id device : devices) {
    kcache::CompilerConfig config;
    config.backend = "opencl";
    config.opencl_context = context;
    config.opencl_device_id = device;
    auto backend = kcache::make_compiler(config);
    if (!backend) return std::nullopt;
    kcache::layer::LoggedCompiler compiler(std::move(*backend));
    kcache::KernelRequest request;
    request.source = source;
    request.options = options != nullptr ? options : "";
    auto kernel = l.cache->get_or_compile(request, compiler);
    if (!kernel) {
      const kcache::Status& status = kernel.status();
      if (devices.size() == 1 && status.code() == kcache::StatusCode::kCompileError &&
          status.message().starts_with(kcache::kOpenClBuildFailed)) {
        failure_log = status.details();
        return std::nullopt;
      }
      kcache::layer::say_left_to_real(*l.cache, "the OpenCL platform", status.to_string());
      return std::nullopt;
    }
    served.logs.push_back(kernel->tier == kcache::TierKind::kCompiled
                              ? kernel->compile_log
                              : kernel->metadata(kcache::kBuildLogField).value_or(""));
    served.kernels.push_back(std::move(*kernel));
  }
  return served;
}

// Makes the built program `key`, when there is one, serve `program` (in
// place of the one that served it before); false when there is none.
bool use_built(Layer& l, cl_program program, const std::string& key) REQUIRES(l.mutex) {
  auto it = l.built.find(key);
  if (it == l.built.end()) return false;
  ++it->second.users;
  Shadow& shadow = l.shadows[program];
  if (!shadow.built.empty()) l.unuse(shadow.built);
  shadow.built = key;
  return true;
}

// clBuildProgram of `program`, served: CL_SUCCESS; CL_BUILD_PROGRAM_FAILURE
// for a source the platform fails to build (kcache's compile of it failed:
// compiled again for real, its compiler would say its errors a second
// time); CL_INVALID_OPERATION for a program whose served build has kernels;
// nullopt for a build the real call must do.
std::optional<cl_int> serve_build(Layer& l, cl_program program, cl_uint num_devices,
                                  const cl_device_id* device_list, const char* options) {
  const RealOpenCl& r = real();
  // Only a program made from source and never built for real.
  auto text = program_array<char>(program, CL_PROGRAM_SOURCE);
  if (!text || text->size() <= 1) return std::nullopt;
  const std::string source(text->data(), std::strlen(text->data()));
  auto context = program_value<cl_context>(program, CL_PROGRAM_CONTEXT);
  auto devices = program_array<cl_device_id>(program, CL_PROGRAM_DEVICES);
  if (!context || !devices || devices->empty()) return std::nullopt;
  for (cl_device_id device : *devices) {
    cl_build_status status = CL_BUILD_NONE;
    if (r.GetProgramBuildInfo(program, device, CL_PROGRAM_BUILD_STATUS, sizeof status, &status,
                              nullptr) != CL_SUCCESS ||
        status != CL_BUILD_NONE) {
      return std::nullopt;
    }
  }
  // For all of the program's devices (a subset is built for real).
  if (device_list != nullptr) {
    if (num_devices != devices->size()) return std::nullopt;
    std::vector<cl_device_id> asked(device_list, device_list + num_devices);
    std::vector<cl_device_id> own = *devices;
    std::sort(asked.begin(), asked.end());
    std::sort(own.begin(), own.end());
    if (asked != own) return std::nullopt;
  } else if (num_devices != 0) {
    return std::nullopt;  // CL_INVALID_VALUE, the platform's to say
  }
  {
    // Built before through the layer: again only without kernels, as
    // OpenCL says.
    kcache::MutexLock lock(l.mutex);
    if (auto it = l.shadows.find(program); it != l.shadows.end() && it->second.kernels > 0) {
      return CL_INVALID_OPERATION;
    }
  }

  std::optional<std::string> failure_log;
  auto served = binaries(l, *context, *devices, source, options, failure_log);
  if (!served && failure_log) {
    kcache::MutexLock lock(l.mutex);
    // A failed build replaces the one that served the program before.
    if (auto it = l.shadows.find(program); it != l.shadows.end()) {
      l.unuse(it->second.built);
      l.shadows.erase(it);
    }
    l.failed[program] =
        FailedBuild{devices->front(), std::move(*failure_log), options != nullptr ? options : ""};
    return CL_BUILD_PROGRAM_FAILURE;
  }
  if (!served) return std::nullopt;
  std::string key = std::to_string(reinterpret_cast<std::uintptr_t>(*context));
  // Appended piece by piece, not joined with +: gcc 12 warns wrongly.
  for (std::size_t i = 0; i < served->kernels.size(); ++i) {
    key.append("|").append(std::to_string(reinterpret_cast<std::uintptr_t>((*devices)[i])));
    key.append(":").append(served->kernels[i].key.hex());
  }
  key.append("|").append(options != nullptr ? options : "");
  kcache::MutexLock lock(l.mutex);
  if (!use_built(l, program, key)) {
    std::vector<std::size_t> lengths;
    std::vector<const unsigned char*> pointers;
    for (const auto& kernel : served->kernels) {
      lengths.push_back(kernel.binary().size());
      pointers.push_back(kernel.binary().data());
    }
    cl_int err = CL_SUCCESS;
    const auto count = static_cast<cl_uint>(devices->size());
    cl_program made = r.CreateProgramWithBinary(*context, count, devices->data(), lengths.data(),
                                                pointers.data(), nullptr, &err);
    if (err == CL_SUCCESS && made != nullptr) {
      err = r.BuildProgram(made, count, devices->data(), options, nullptr, nullptr);
      if (err != CL_SUCCESS) r.ReleaseProgram(made);
    }
    if (err != CL_SUCCESS || made == nullptr) {
      // The platform refuses what the cache gave: removed from it, so that
      // the next process compiles it again (this one builds for real).
      for (const auto& kernel : served->kernels) {
        if (kernel.tier != kcache::TierKind::kCompiled) {
          kcache::AdvancedCache(*l.cache).reject(
              kernel, "clBuildProgram of the binary: OpenCL error " + std::to_string(err));
        }
      }
      return std::nullopt;
    }
    l.built.emplace(key, Built{made, std::move(*devices), std::move(served->logs),
                               std::move(served->kernels), 0});
    use_built(l, program, key);
  }
  return CL_SUCCESS;
}

// A build of `program` the platform does for real: what served it before
// must not answer for it any more (a failed rebuild fails, as it would).
void forget_shadow(Layer& l, cl_program program) {
  kcache::MutexLock lock(l.mutex);
  auto it = l.shadows.find(program);
  if (it == l.shadows.end() || it->second.kernels > 0) return;
  l.unuse(it->second.built);
  l.shadows.erase(it);
}

// A new build of `program` replaces the answer of its failed one.
void forget_failure(Layer& l, cl_program program) {
  kcache::MutexLock lock(l.mutex);
  l.failed.erase(program);
}

// The answer to a query of `program`'s build on `device` when its build
// failed through the layer (FailedBuild); nullopt otherwise.
std::optional<cl_int> failed_build_info(Layer& l, cl_program program, cl_device_id device,
                                        cl_program_build_info param_name, std::size_t size,
                                        void* value, std::size_t* size_ret) {
  kcache::MutexLock lock(l.mutex);
  auto it = l.failed.find(program);
  if (it == l.failed.end() || it->second.device != device) return std::nullopt;
  switch (param_name) {
    case CL_PROGRAM_BUILD_STATUS: {
      const cl_build_status status = CL_BUILD_ERROR;
      if (value != nullptr) {
        if (size < sizeof status) return CL_INVALID_VALUE;
        std::memcpy(value, &status, sizeof status);
      }
      if (size_ret != nullptr) *size_ret = sizeof status;
      return CL_SUCCESS;
    }
    case CL_PROGRAM_BUILD_LOG:
      return answer_text(it->second.log, size, value, size_ret);
    case CL_PROGRAM_BUILD_OPTIONS:
      return answer_text(it->second.options, size, value, size_ret);
    default:
      return std::nullopt;
  }
}

// The shadow's program for a query of `program` that the built program
// answers; `program` itself when it has none.
cl_program built_for(cl_program program) {
  Layer* l = layer();
  if (l == nullptr) return program;
  kcache::MutexLock lock(l->mutex);
  const Built* built = l->serving(program);
  return built == nullptr ? program : built->program;
}

// A kernel of a shadow's program retains the source program, as a kernel
// retains its program; released with the kernel.
void adopt_kernels(Layer& l, cl_program program, const cl_kernel* kernels, cl_uint count) {
  for (cl_uint i = 0; i < count; ++i) {
    if (kernels[i] == nullptr) continue;
    real().RetainProgram(program);
    kcache::MutexLock lock(l.mutex);
    l.kernels[kernels[i]] = program;
    if (auto it = l.shadows.find(program); it != l.shadows.end()) ++it->second.kernels;
  }
}

}  // namespace

// The entry points are the only symbols the layer exports (the rest is
// hidden: CXX_VISIBILITY_PRESET), so it interposes nothing else on the
// program it is preloaded into.
#define KCACHE_LAYER_EXPORT __attribute__((visibility("default")))

extern "C" {

KCACHE_LAYER_EXPORT CL_API_ENTRY cl_int CL_API_CALL clBuildProgram(
    cl_program program, cl_uint num_devices, const cl_device_id* device_list, const char* options,
    void(CL_CALLBACK* pfn_notify)(cl_program, void*), void* user_data) {
  if (Layer* l = layer(); l != nullptr && program != nullptr) {
    forget_failure(*l, program);
    if (auto served = serve_build(*l, program, num_devices, device_list, options)) {
      // The build is over, done or failed (as the platform calls it).
      if (*served != CL_INVALID_OPERATION && pfn_notify != nullptr) pfn_notify(program, user_data);
      return *served;
    }
    forget_shadow(*l, program);
  }
  return real().BuildProgram(program, num_devices, device_list, options, pfn_notify, user_data);
}

KCACHE_LAYER_EXPORT CL_API_ENTRY cl_int CL_API_CALL clGetProgramInfo(cl_program program,
                                                                     cl_program_info param_name,
                                                                     size_t param_value_size,
                                                                     void* param_value,
                                                                     size_t* param_value_size_ret) {
  switch (param_name) {
    case CL_PROGRAM_REFERENCE_COUNT:
    case CL_PROGRAM_CONTEXT:
    case CL_PROGRAM_NUM_DEVICES:
    case CL_PROGRAM_DEVICES:
    case CL_PROGRAM_SOURCE:
    case CL_PROGRAM_IL:
      break;  // the program's own
    default:
      program = built_for(program);
  }
  return real().GetProgramInfo(program, param_name, param_value_size, param_value,
                               param_value_size_ret);
}

KCACHE_LAYER_EXPORT CL_API_ENTRY cl_int CL_API_CALL
clGetProgramBuildInfo(cl_program program, cl_device_id device, cl_program_build_info param_name,
                      size_t param_value_size, void* param_value, size_t* param_value_size_ret) {
  if (Layer* l = layer(); l != nullptr) {
    if (auto answer = failed_build_info(*l, program, device, param_name, param_value_size,
                                        param_value, param_value_size_ret)) {
      return *answer;
    }
  }
  if (Layer* l = layer(); l != nullptr && param_name == CL_PROGRAM_BUILD_LOG) {
    kcache::ReleasableMutexLock lock(l->mutex);
    if (const Built* built = l->serving(program)) {
      auto at = std::find(built->devices.begin(), built->devices.end(), device);
      if (at != built->devices.end()) {
        const std::string log = built->logs[static_cast<std::size_t>(at - built->devices.begin())];
        lock.release();
        return answer_text(log, param_value_size, param_value, param_value_size_ret);
      }
    }
  }
  return real().GetProgramBuildInfo(built_for(program), device, param_name, param_value_size,
                                    param_value, param_value_size_ret);
}

KCACHE_LAYER_EXPORT CL_API_ENTRY cl_kernel CL_API_CALL clCreateKernel(cl_program program,
                                                                      const char* kernel_name,
                                                                      cl_int* errcode_ret) {
  const cl_program built = built_for(program);
  cl_kernel kernel = real().CreateKernel(built, kernel_name, errcode_ret);
  if (built != program && kernel != nullptr) adopt_kernels(*layer(), program, &kernel, 1);
  return kernel;
}

KCACHE_LAYER_EXPORT CL_API_ENTRY cl_int CL_API_CALL clCreateKernelsInProgram(
    cl_program program, cl_uint num_kernels, cl_kernel* kernels, cl_uint* num_kernels_ret) {
  const cl_program built = built_for(program);
  cl_uint made = 0;
  const cl_int err = real().CreateKernelsInProgram(built, num_kernels, kernels, &made);
  if (num_kernels_ret != nullptr) *num_kernels_ret = made;
  if (err == CL_SUCCESS && built != program && kernels != nullptr) {
    adopt_kernels(*layer(), program, kernels, made);
  }
  return err;
}

KCACHE_LAYER_EXPORT CL_API_ENTRY cl_kernel CL_API_CALL clCloneKernel(cl_kernel source_kernel,
                                                                     cl_int* errcode_ret) {
  if (real().CloneKernel == nullptr) {
    if (errcode_ret != nullptr) *errcode_ret = CL_INVALID_OPERATION;
    return nullptr;
  }
  cl_kernel clone = real().CloneKernel(source_kernel, errcode_ret);
  if (Layer* l = layer(); l != nullptr && clone != nullptr) {
    cl_program program = nullptr;
    {
      kcache::MutexLock lock(l->mutex);
      if (auto it = l->kernels.find(source_kernel); it != l->kernels.end()) program = it->second;
    }
    if (program != nullptr) adopt_kernels(*l, program, &clone, 1);
  }
  return clone;
}

KCACHE_LAYER_EXPORT CL_API_ENTRY cl_int CL_API_CALL clReleaseKernel(cl_kernel kernel) {
  Layer* l = layer();
  if (l == nullptr) return real().ReleaseKernel(kernel);
  cl_program program = nullptr;
  cl_int err = CL_SUCCESS;
  {
    kcache::MutexLock lock(l->mutex);
    auto it = l->kernels.find(kernel);
    if (it == l->kernels.end()) return real().ReleaseKernel(kernel);
    const bool last = last_reference(real().GetKernelInfo, kernel, CL_KERNEL_REFERENCE_COUNT);
    err = real().ReleaseKernel(kernel);
    if (err == CL_SUCCESS && last) {
      program = it->second;
      l->kernels.erase(it);
      if (auto shadow = l->shadows.find(program); shadow != l->shadows.end()) {
        --shadow->second.kernels;
      }
    }
  }
  if (program != nullptr) clReleaseProgram(program);
  return err;
}

KCACHE_LAYER_EXPORT CL_API_ENTRY cl_int CL_API_CALL clGetKernelInfo(cl_kernel kernel,
                                                                    cl_kernel_info param_name,
                                                                    size_t param_value_size,
                                                                    void* param_value,
                                                                    size_t* param_value_size_ret) {
  const cl_int err =
      real().GetKernelInfo(kernel, param_name, param_value_size, param_value, param_value_size_ret);
  Layer* l = layer();
  if (err == CL_SUCCESS && l != nullptr && param_name == CL_KERNEL_PROGRAM &&
      param_value != nullptr && param_value_size >= sizeof(cl_program)) {
    kcache::MutexLock lock(l->mutex);
    if (auto it = l->kernels.find(kernel); it != l->kernels.end()) {
      *static_cast<cl_program*>(param_value) = it->second;
    }
  }
  return err;
}

KCACHE_LAYER_EXPORT CL_API_ENTRY cl_int CL_API_CALL clReleaseProgram(cl_program program) {
  Layer* l = layer();
  if (l == nullptr) return real().ReleaseProgram(program);
  kcache::MutexLock lock(l->mutex);
  auto it = l->shadows.find(program);
  const bool failed = l->failed.count(program) != 0;
  if (it == l->shadows.end() && !failed) return real().ReleaseProgram(program);
  const bool last = last_reference(real().GetProgramInfo, program, CL_PROGRAM_REFERENCE_COUNT);
  const cl_int err = real().ReleaseProgram(program);
  if (err == CL_SUCCESS && last) {
    if (it != l->shadows.end()) {
      l->unuse(it->second.built);
      l->shadows.erase(it);
    }
    l->failed.erase(program);
  }
  return err;
}

}  // extern "C"
