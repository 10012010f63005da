// The "opencl" backend: any OpenCL platform through the ICD loader,
// libOpenCL.so.1, loaded at run time. The only file that includes CL/cl.h.
//
// The binary stored is what CL_PROGRAM_BINARIES returns after the build
// (and after the request's warmup, if any: on PoCL a binary read after the
// kernels ran holds their compiled work-group code and loads ready to
// launch; one read right after the build holds bitcode only).
#define CL_TARGET_OPENCL_VERSION 120
#include <CL/cl.h>

#include <algorithm>
#include <cctype>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <mutex>

#include "compiler/dynamic_library.h"
#include "compiler/registry.h"
#include "env/temp_dir.h"

namespace kcache {
namespace {

// The entry points kcache uses, bound from the loader.
struct OpenClApi {
  std::shared_ptr<DynamicLibrary> library;
  decltype(&clGetPlatformIDs) GetPlatformIDs = nullptr;
  decltype(&clGetPlatformInfo) GetPlatformInfo = nullptr;
  decltype(&clGetDeviceIDs) GetDeviceIDs = nullptr;
  decltype(&clGetDeviceInfo) GetDeviceInfo = nullptr;
  decltype(&clCreateContext) CreateContext = nullptr;
  decltype(&clRetainContext) RetainContext = nullptr;
  decltype(&clReleaseContext) ReleaseContext = nullptr;
  decltype(&clCreateProgramWithSource) CreateProgramWithSource = nullptr;
  decltype(&clBuildProgram) BuildProgram = nullptr;
  decltype(&clGetProgramBuildInfo) GetProgramBuildInfo = nullptr;
  decltype(&clGetProgramInfo) GetProgramInfo = nullptr;
  decltype(&clReleaseProgram) ReleaseProgram = nullptr;
  decltype(&clCreateKernel) CreateKernel = nullptr;
  decltype(&clReleaseKernel) ReleaseKernel = nullptr;

  static Result<std::shared_ptr<const OpenClApi>> load() {
    auto library = DynamicLibrary::open({"libOpenCL.so.1", "libOpenCL.so"});
    if (!library) {
      return Status::unavailable("the OpenCL backend needs the OpenCL ICD loader: " +
                                 library.status().message());
    }
    auto api = std::make_shared<OpenClApi>();
    api->library = *library;
    const DynamicLibrary& lib = **library;
    for (Status s : {lib.bind("clGetPlatformIDs", api->GetPlatformIDs),
                     lib.bind("clGetPlatformInfo", api->GetPlatformInfo),
                     lib.bind("clGetDeviceIDs", api->GetDeviceIDs),
                     lib.bind("clGetDeviceInfo", api->GetDeviceInfo),
                     lib.bind("clCreateContext", api->CreateContext),
                     lib.bind("clRetainContext", api->RetainContext),
                     lib.bind("clReleaseContext", api->ReleaseContext),
                     lib.bind("clCreateProgramWithSource", api->CreateProgramWithSource),
                     lib.bind("clBuildProgram", api->BuildProgram),
                     lib.bind("clGetProgramBuildInfo", api->GetProgramBuildInfo),
                     lib.bind("clGetProgramInfo", api->GetProgramInfo),
                     lib.bind("clReleaseProgram", api->ReleaseProgram),
                     lib.bind("clCreateKernel", api->CreateKernel),
                     lib.bind("clReleaseKernel", api->ReleaseKernel)}) {
      if (!s.is_ok()) return s;
    }
    return std::shared_ptr<const OpenClApi>(api);
  }
};

std::string platform_string(const OpenClApi& cl, cl_platform_id platform, cl_platform_info what) {
  std::size_t size = 0;
  if (cl.GetPlatformInfo(platform, what, 0, nullptr, &size) != CL_SUCCESS || size == 0) return {};
  std::string value(size, '\0');
  cl.GetPlatformInfo(platform, what, size, value.data(), nullptr);
  value.resize(std::strlen(value.c_str()));
  return value;
}

std::string device_string(const OpenClApi& cl, cl_device_id device, cl_device_info what) {
  std::size_t size = 0;
  if (cl.GetDeviceInfo(device, what, 0, nullptr, &size) != CL_SUCCESS || size == 0) return {};
  std::string value(size, '\0');
  cl.GetDeviceInfo(device, what, size, value.data(), nullptr);
  value.resize(std::strlen(value.c_str()));
  return value;
}

template <class T>
T device_value(const OpenClApi& cl, cl_device_id device, cl_device_info what) {
  T value{};
  cl.GetDeviceInfo(device, what, sizeof value, &value, nullptr);
  return value;
}

// "gfx906:sramecc+:xnack-" is an AMD target id; any other device name is
// turned into a file-name-safe arch: "pthread-skylake-avx512-AMD EPYC" ->
// "pthread-skylake-avx512-amd-epyc".
Target target_of(const std::string& device_name, int units) {
  if (device_name.starts_with("gfx")) {
    if (auto parsed = Target::parse(device_name)) {
      parsed->units = units;
      return *parsed;
    }
  }
  std::string arch;
  for (unsigned char c : device_name) {
    if (std::isalnum(c) || c == '_' || c == '.') {
      arch.push_back(static_cast<char>(std::tolower(c)));
    } else if (!arch.empty() && arch.back() != '-') {
      arch.push_back('-');
    }
  }
  while (!arch.empty() && arch.back() == '-') arch.pop_back();
  if (arch.empty()) arch = "opencl-device";
  return Target{arch, "", units};
}

std::string cl_error(cl_int code) { return "OpenCL error " + std::to_string(code); }

class OpenClCompiler final : public Compiler {
 public:
  OpenClCompiler(std::shared_ptr<const OpenClApi> api, cl_context context, cl_device_id device,
                 CompilerIdentity identity, Target target)
      : api_(std::move(api)),
        context_(context),
        device_(device),
        identity_(std::move(identity)),
        target_(std::move(target)) {}

  ~OpenClCompiler() override { api_->ReleaseContext(context_); }

  const CompilerIdentity& identity() const override { return identity_; }

  Result<Target> resolve_target(const Target& requested) const override {
    if (requested.empty()) return target_;
    if (requested.arch == target_.arch &&
        (requested.units == 0 || requested.units == target_.units) &&
        (requested.features.empty() || requested.features == target_.features)) {
      return target_;
    }
    return Status::invalid_argument("the OpenCL device is " + target_.db_basename() + " (" +
                                    target_.id() + "); it cannot compile for '" +
                                    requested.db_basename() + "'");
  }

  Result<CompileOutput> compile(const KernelRequest& request, const Target& /*target*/) override {
    const OpenClApi& cl = *api_;
    std::string options = request.options;
    std::optional<TempDir> header_dir;
    if (!request.headers.empty()) {
      // OpenCL 1.2 takes headers only as separate programs; a private folder
      // on the include path works on every platform.
      auto temp = TempDir::create("kcache-cl-headers-");
      if (!temp) return temp.status();
      for (const auto& header : request.headers) {
        if (header.name.find("..") != std::string::npos || header.name.starts_with("/")) {
          return Status::invalid_argument("in-memory header name '" + header.name +
                                          "' must be a relative path without '..'");
        }
        std::filesystem::path path = std::filesystem::path(temp->path()) / header.name;
        std::error_code ignored;
        std::filesystem::create_directories(path.parent_path(), ignored);
        std::ofstream(path, std::ios::binary) << header.content;
      }
      options += " -I" + temp->path();
      header_dir.emplace(std::move(*temp));
    }
    for (const auto& dir : request.include_dirs) options += " -I" + dir;

    const char* source = request.source.c_str();
    const std::size_t length = request.source.size();
    cl_int err = CL_SUCCESS;
    cl_program program = cl.CreateProgramWithSource(context_, 1, &source, &length, &err);
    if (err != CL_SUCCESS)
      return Status::unavailable("clCreateProgramWithSource: " + cl_error(err));
    struct Releaser {
      const OpenClApi& cl;
      cl_program program;
      ~Releaser() { cl.ReleaseProgram(program); }
    } release{cl, program};

    err = cl.BuildProgram(program, 1, &device_, options.c_str(), nullptr, nullptr);
    std::string log = build_log(program);
    if (err == CL_BUILD_PROGRAM_FAILURE || err == CL_INVALID_BUILD_OPTIONS) {
      return Status::compile_error(err == CL_INVALID_BUILD_OPTIONS
                                       ? "invalid OpenCL build options: " + request.options
                                       : "the OpenCL build failed",
                                   log);
    }
    if (err != CL_SUCCESS) return Status::compile_error("clBuildProgram: " + cl_error(err), log);

    for (const auto& name : request.kernel_names) {
      cl_kernel kernel = cl.CreateKernel(program, name.c_str(), &err);
      if (err != CL_SUCCESS) {
        return Status::compile_error("the program has no kernel named '" + name + "'", log);
      }
      cl.ReleaseKernel(kernel);
    }
    if (request.warmup) {
      if (Status s = request.warmup(BuiltProgram{"opencl", context_, device_, program});
          !s.is_ok()) {
        return Status(s.code(), "the warmup callback failed: " + s.message(), s.details());
      }
    }

    std::size_t size = 0;
    err = cl.GetProgramInfo(program, CL_PROGRAM_BINARY_SIZES, sizeof size, &size, nullptr);
    if (err != CL_SUCCESS || size == 0) {
      return Status::unavailable("this OpenCL platform returns no program binary (" +
                                 cl_error(err) + ")");
    }
    CompileOutput output;
    output.binary.resize(size);
    unsigned char* pointer = output.binary.data();
    err = cl.GetProgramInfo(program, CL_PROGRAM_BINARIES, sizeof pointer, &pointer, nullptr);
    if (err != CL_SUCCESS) return Status::unavailable("CL_PROGRAM_BINARIES: " + cl_error(err));

    const bool pocl = size >= 7 && std::equal(output.binary.begin(), output.binary.begin() + 7,
                                              std::string_view("poclbin").begin());
    const bool elf = size >= 4 && output.binary[0] == 0x7F && output.binary[1] == 'E' &&
                     output.binary[2] == 'L' && output.binary[3] == 'F';
    output.metadata.emplace_back("format", pocl ? "poclbin" : elf ? "elf" : "opencl-binary");
    output.metadata.emplace_back("warmed", request.warmup ? "yes" : "no");
    output.log = std::move(log);
    return output;
  }

 private:
  std::string build_log(cl_program program) const {
    std::size_t size = 0;
    if (api_->GetProgramBuildInfo(program, device_, CL_PROGRAM_BUILD_LOG, 0, nullptr, &size) !=
            CL_SUCCESS ||
        size == 0) {
      return {};
    }
    std::string log(size, '\0');
    api_->GetProgramBuildInfo(program, device_, CL_PROGRAM_BUILD_LOG, size, log.data(), nullptr);
    log.resize(std::strlen(log.c_str()));
    return log;
  }

  std::shared_ptr<const OpenClApi> api_;
  cl_context context_;
  cl_device_id device_;
  CompilerIdentity identity_;
  Target target_;
};

// The process's OpenCL loader, loaded once.
Result<std::shared_ptr<const OpenClApi>> opencl_api() {
  static std::mutex mutex;
  static std::optional<Result<std::shared_ptr<const OpenClApi>>> loaded;
  std::lock_guard lock(mutex);
  if (!loaded) loaded = OpenClApi::load();
  return *loaded;
}

}  // namespace

Result<std::unique_ptr<Compiler>> make_opencl_compiler(const CompilerConfig& config) {
  auto loaded = opencl_api();
  if (!loaded) return loaded.status();
  const OpenClApi& cl = **loaded;

  cl_device_id device = static_cast<cl_device_id>(config.opencl_device_id);
  cl_context context = static_cast<cl_context>(config.opencl_context);
  if ((device == nullptr) != (context == nullptr)) {
    return Status::invalid_argument("give both an OpenCL context and a device, or neither");
  }
  if (device == nullptr) {
    cl_uint count = 0;
    cl_int err = cl.GetPlatformIDs(0, nullptr, &count);
    if (err != CL_SUCCESS || count == 0) {
      return Status::unavailable("no OpenCL platform is installed (clGetPlatformIDs: " +
                                 cl_error(err) + "); on Debian: apt-get install pocl-opencl-icd");
    }
    std::vector<cl_platform_id> platforms(count);
    cl.GetPlatformIDs(count, platforms.data(), nullptr);
    if (config.opencl_platform >= static_cast<int>(count)) {
      return Status::invalid_argument("OpenCL platform " + std::to_string(config.opencl_platform) +
                                      " does not exist (" + std::to_string(count) + " installed)");
    }
    for (cl_uint p = 0; p < count && device == nullptr; ++p) {
      if (config.opencl_platform >= 0 && static_cast<int>(p) != config.opencl_platform) continue;
      cl_uint devices = 0;
      if (cl.GetDeviceIDs(platforms[p], CL_DEVICE_TYPE_ALL, 0, nullptr, &devices) != CL_SUCCESS ||
          static_cast<int>(devices) <= config.opencl_device) {
        continue;
      }
      std::vector<cl_device_id> ids(devices);
      cl.GetDeviceIDs(platforms[p], CL_DEVICE_TYPE_ALL, devices, ids.data(), nullptr);
      device = ids[config.opencl_device];
    }
    if (device == nullptr) {
      return Status::unavailable("no OpenCL device " + std::to_string(config.opencl_device) +
                                 " on the selected platform");
    }
    cl_int err2 = CL_SUCCESS;
    context = cl.CreateContext(nullptr, 1, &device, nullptr, nullptr, &err2);
    if (err2 != CL_SUCCESS) return Status::unavailable("clCreateContext: " + cl_error(err2));
  } else {
    cl.RetainContext(context);
  }

  cl_platform_id platform = device_value<cl_platform_id>(cl, device, CL_DEVICE_PLATFORM);
  CompilerIdentity identity;
  identity.backend = "opencl";
  identity.id = platform_string(cl, platform, CL_PLATFORM_NAME) + " | " +
                device_string(cl, device, CL_DEVICE_NAME) + " | vendor " +
                std::to_string(device_value<cl_uint>(cl, device, CL_DEVICE_VENDOR_ID));
  identity.version = platform_string(cl, platform, CL_PLATFORM_VERSION) + " | " +
                     device_string(cl, device, CL_DEVICE_VERSION) + " | driver " +
                     device_string(cl, device, CL_DRIVER_VERSION) + " | " +
                     device_string(cl, device, CL_DEVICE_OPENCL_C_VERSION);
  Target target =
      target_of(device_string(cl, device, CL_DEVICE_NAME),
                static_cast<int>(device_value<cl_uint>(cl, device, CL_DEVICE_MAX_COMPUTE_UNITS)));
  return std::unique_ptr<Compiler>(std::make_unique<OpenClCompiler>(
      *loaded, context, device, std::move(identity), std::move(target)));
}

}  // namespace kcache
