// The "opencl" backend: any OpenCL platform through the ICD loader,
// libOpenCL.so.1, loaded at run time. The only file that includes CL/cl.h.
//
// The binary stored is what CL_PROGRAM_BINARIES returns after the build
// (and after the request's warmup, if any: on PoCL a binary read after the
// kernels ran holds their compiled work-group code and loads ready to
// launch; one read right after the build holds bitcode only).
#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>  // environ

#define CL_TARGET_OPENCL_VERSION 120
#include <CL/cl.h>

#include <algorithm>
#include <cctype>
#include <cerrno>
#include <chrono>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <mutex>

#include "base/hash.h"
#include "compiler/compiler_facts.h"
#include "compiler/loaded_libraries.h"
#include "compiler/opencl/opencl_build_failure.h"
#include "compiler/registry.h"
#include "env/dynamic_library.h"
#include "inputs/options.h"

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

// The folder that holds `headers` as files, for the include path. OpenCL
// 1.2 takes headers only as separate programs; a folder works on every
// platform. PoCL keeps a build's options in its binary, so the folder's
// name must be the same each time for the same headers, or no two builds
// would give the same bytes: ${TMPDIR:-/tmp}/kcache-<uid>/opencl-headers/
// <XXH3-128 of the names and contents>. It lives in the per-user private
// folder (kcache-<uid>, 0700, checked as the user cache's fallback is: no
// one else can put files there) and is made whole in a temporary folder,
// then renamed into place, so a folder of that name always holds exactly
// those headers. Each use touches it; folders no build used for a day are
// removed, at most once per process.
Result<std::string> header_folder(const std::vector<Header>& headers) {
  namespace fs = std::filesystem;
  for (const auto& header : headers) {
    if (header.name.empty() || header.name.starts_with('/') ||
        (fs::path(header.name).lexically_normal().string().starts_with(".."))) {
      return Status::invalid_argument("in-memory header name '" + header.name +
                                      "' must be a relative path without '..'");
    }
  }
  std::string base = "/tmp";
  if (const char* tmp = std::getenv("TMPDIR"); tmp && tmp[0] == '/') base = tmp;
  while (base.size() > 1 && base.back() == '/') base.pop_back();
  const std::string root = (base == "/" ? "" : base) + "/kcache-" + std::to_string(::getuid());
  for (const std::string& dir : {root, root + "/opencl-headers"}) {
    if (::mkdir(dir.c_str(), 0700) != 0 && errno != EEXIST) {
      return Status::io_error("cannot create " + dir + ": " + std::strerror(errno));
    }
    struct stat st {};
    if (::lstat(dir.c_str(), &st) != 0 || !S_ISDIR(st.st_mode) || st.st_uid != ::getuid() ||
        (st.st_mode & 077) != 0) {
      return Status::io_error(dir +
                              " is not a private folder of this user (a folder owned by "
                              "this user, mode 0700, not a link); remove it");
    }
  }
  const std::string parent = root + "/opencl-headers";
  Checksummer sum;
  for (const auto& header : headers) {
    const std::string size =
        std::to_string(header.name.size()) + ":" + std::to_string(header.content.size()) + ":";
    for (std::string_view part : {std::string_view(size), std::string_view(header.name),
                                  std::string_view(header.content)}) {
      sum.update({reinterpret_cast<const std::uint8_t*>(part.data()), part.size()});
    }
  }
  const std::string folder = parent + "/" + to_hex(sum.finish());
  static std::once_flag pruned;
  std::call_once(pruned, [&] {
    std::error_code error;
    const auto day_ago = fs::file_time_type::clock::now() - std::chrono::hours(24);
    for (const auto& entry : fs::directory_iterator(parent, error)) {
      std::error_code ignored;
      if (entry.is_directory(ignored) && !entry.is_symlink(ignored) &&
          fs::last_write_time(entry.path(), ignored) < day_ago) {
        fs::remove_all(entry.path(), ignored);
      }
    }
  });
  if (::utimensat(AT_FDCWD, folder.c_str(), nullptr, AT_SYMLINK_NOFOLLOW) == 0) return folder;

  char pattern[] = "XXXXXX";
  std::string temp = parent + "/.new-" + pattern;
  if (::mkdtemp(temp.data()) == nullptr) {
    return Status::io_error("cannot create a folder in " + parent + ": " + std::strerror(errno));
  }
  for (const auto& header : headers) {
    const fs::path path = fs::path(temp) / header.name;
    std::error_code ignored;
    fs::create_directories(path.parent_path(), ignored);
    std::ofstream out(path, std::ios::binary);
    out << header.content;
    out.close();
    if (!out) {
      fs::remove_all(temp, ignored);
      return Status::io_error("cannot write " + path.string());
    }
  }
  if (::rename(temp.c_str(), folder.c_str()) != 0) {
    // Another build made it first (ENOTEMPTY/EEXIST): the same headers.
    const int err = errno;
    std::error_code ignored;
    fs::remove_all(temp, ignored);
    if (err != ENOTEMPTY && err != EEXIST) {
      return Status::io_error("cannot rename a folder to " + folder + ": " + std::strerror(err));
    }
  }
  return folder;
}

class OpenClCompiler final : public Compiler {
 public:
  OpenClCompiler(std::shared_ptr<const OpenClApi> api, cl_context context, cl_device_id device,
                 CompilerIdentity identity, Target target, CompilerInputs inputs)
      : api_(std::move(api)),
        context_(context),
        device_(device),
        identity_(std::move(identity)),
        target_(std::move(target)),
        inputs_(std::move(inputs)) {}

  ~OpenClCompiler() override { api_->ReleaseContext(context_); }

  const CompilerIdentity& identity() const override { return identity_; }

  const CompilerInputs& inputs() const override { return inputs_; }

  Result<Target> resolve_target(const Target& requested) const override {
    if (requested.empty()) return target_;
    const bool features_fit = requested.features.empty() || requested.features == target_.features;
    if (requested.arch == target_.arch &&
        (requested.units == 0 || requested.units == target_.units) && features_fit) {
      return target_;
    }
    // Its own name read back: for a device whose name holds no digit
    // ("pthread-haswell-amd-epyc"), "..._2" cannot be told from an arch
    // ending in "_2" (Target::parse), so it reads as an arch, no units.
    if (requested.units == 0 && requested.arch == target_.db_basename() && features_fit) {
      return target_;
    }
    return Status::invalid_argument("the OpenCL device is " + target_.db_basename() + " (" +
                                    target_.id() + "); it cannot compile for '" +
                                    requested.db_basename() + "'");
  }

  // A binary stored without a warmup (by `kcache compile`, say) does not
  // serve a request that has one: PoCL makes a kernel's work-group code at
  // its first launch and keeps it in the binary, so the warmed build, made
  // now and stored over it, saves every later process that launch's
  // compile. The metadata field is this backend's (kWarmedField).
  bool stored_binary_serves(
      const KernelRequest& request,
      const std::vector<std::pair<std::string, std::string>>& metadata) const override {
    if (!request.warmup) return true;
    return std::none_of(metadata.begin(), metadata.end(), [](const auto& field) {
      return field.first == kWarmedField && field.second == "no";
    });
  }

  Result<CompileOutput> compile(const KernelRequest& request, const Target& /*target*/) override {
    const OpenClApi& cl = *api_;
    // The tokens the key holds, as one string; a request with a token that
    // cannot be passed as itself is not keyed, and gets its options as the
    // caller wrote them.
    auto parsed = request_options(request, inputs_);
    if (!parsed) return parsed.status();
    std::string options = join_options(parsed->tokens).value_or(request.options);
    if (!request.headers.empty()) {
      auto folder = header_folder(request.headers);
      if (!folder) return folder.status();
      options += " -I" + *folder;
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
                                       ? "invalid OpenCL build options: " + options
                                       : std::string(kOpenClBuildFailed),
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
    output.metadata.emplace_back(kFormatField, pocl ? "poclbin" : elf ? "elf" : "opencl-binary");
    output.metadata.emplace_back(kWarmedField, request.warmup ? "yes" : "no");
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
  CompilerInputs inputs_;
};

// What changes PoCL's output besides the options: the variables its
// documentation lists for the compiler and the CPU driver (all POCL_*,
// except those that only log, trace or move its own cache).
std::vector<std::pair<std::string, std::string>> output_environment() {
  static constexpr std::string_view kHarmless[] = {
      "POCL_DEBUG",          "POCL_DEBUG_LLVM_PASSES", "POCL_CACHE_DIR",
      "POCL_KERNEL_CACHE",   "POCL_TRACING",           "POCL_TRACING_OPT",
      "POCL_TRACING_FILTER", "POCL_AFFINITY",          "POCL_LEAVE_KERNEL_COMPILER_TEMP_FILES",
      "POCL_VERBOSE",        "POCL_STARTUP_DELAY",     "POCL_DUMP_TASK_GRAPHS",
      "POCL_MEMORY_LIMIT",   "POCL_MAX_PTHREAD_COUNT"};
  std::vector<std::pair<std::string, std::string>> found;
  for (char** entry = environ; entry != nullptr && *entry != nullptr; ++entry) {
    const std::string_view text(*entry);
    if (!text.starts_with("POCL_")) continue;
    const std::size_t eq = text.find('=');
    if (eq == std::string_view::npos) continue;
    const std::string_view name = text.substr(0, eq);
    if (std::find(std::begin(kHarmless), std::end(kHarmless), name) != std::end(kHarmless))
      continue;
    found.emplace_back(std::string(name), std::string(text.substr(eq + 1)));
  }
  std::sort(found.begin(), found.end());
  return found;
}

// The process's OpenCL loader, loaded once.
Result<std::shared_ptr<const OpenClApi>> opencl_api() {
  static std::mutex mutex;
  static std::optional<Result<std::shared_ptr<const OpenClApi>>> loaded;
  std::lock_guard lock(mutex);
  if (!loaded) loaded = OpenClApi::load();
  return *loaded;
}

// The file names of the drivers the ICD loader is told of: the first line
// of each .icd file in OCL_ICD_VENDORS (a folder, or one file) or
// /etc/OpenCL/vendors.
std::vector<std::string> icd_driver_names() {
  const char* vendors = std::getenv("OCL_ICD_VENDORS");
  std::filesystem::path where =
      vendors != nullptr && *vendors != '\0' ? vendors : "/etc/OpenCL/vendors";
  std::vector<std::filesystem::path> files;
  std::error_code error;
  if (std::filesystem::is_directory(where, error)) {
    for (const auto& entry : std::filesystem::directory_iterator(where, error)) {
      if (entry.path().extension() == ".icd") files.push_back(entry.path());
    }
  } else {
    files.push_back(where);
  }
  std::vector<std::string> names;
  // The Khronos loader also takes drivers by name (OCL_ICD_FILENAMES).
  if (const char* named = std::getenv("OCL_ICD_FILENAMES"); named != nullptr) {
    std::string_view list = named;
    while (!list.empty()) {
      const auto end = std::min(list.find(':'), list.size());
      if (end > 0) names.push_back(std::filesystem::path(list.substr(0, end)).filename().string());
      list.remove_prefix(std::min(list.size(), end + 1));
    }
  }
  for (const auto& file : files) {
    std::ifstream in(file);
    std::string line;
    if (std::getline(in, line) && !line.empty()) {
      names.push_back(std::filesystem::path(line).filename().string());
    }
  }
  return names;
}

// Whether the library at `path` is part of the OpenCL stack: a driver an
// .icd file names, or a library whose name says it is OpenCL's, PoCL's, or
// a compiler one of them uses.
bool in_opencl_stack(const std::string& path, const std::vector<std::string>& drivers) {
  const std::string name = std::filesystem::path(path).filename().string();
  std::string lower = name;
  std::transform(lower.begin(), lower.end(), lower.begin(),
                 [](unsigned char c) { return static_cast<char>(std::tolower(c)); });
  // kcache's own libraries make no binary: the OpenCL layer
  // (libkcache_opencl_layer.so) is loaded in the programs it serves and
  // not in the tool that packs their kernels, which must key them alike.
  if (lower.starts_with("libkcache")) return false;
  // The vendors' compilers, which their drivers load themselves: Intel's
  // IGC (libigc, libigdfcl), AMD's comgr, NVIDIA's PTX JIT and NVVM.
  for (const char* part : {"opencl", "pocl", "llvm", "clang", "igc", "igdfcl", "igdrcl", "comgr",
                           "amdocl", "ptxjitcompiler", "nvvm"}) {
    if (lower.find(part) != std::string::npos) return true;
  }
  return std::find(drivers.begin(), drivers.end(), name) != drivers.end();
}

// The build of the OpenCL stack: the files of the libraries in_opencl_stack
// names, each by its build-id (build_parts.h). A Debian update of PoCL or
// LLVM keeps their version strings ("3.1+debian", "LLVM 15.0.6"); it
// changes these files.
// Chosen by name, not by when they were loaded, so that a program that
// loaded OpenCL itself before kcache did and the kcache tool (pack) derive
// the same identity: libraries the stack merely uses (libhwloc, libz)
// differ between the two and do not make the binary.
std::string opencl_build(const Env& env) {
  static std::once_flag once;
  static std::string build;
  std::call_once(once, [&] {
    const std::vector<std::string> drivers = icd_driver_names();
    std::vector<std::string> stack;
    for (const auto& path : loaded_libraries()) {
      if (in_opencl_stack(path, drivers)) stack.push_back(path);
    }
    build = build_fingerprint(stack, env);
  });
  return build;
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
                     device_string(cl, device, CL_DEVICE_OPENCL_C_VERSION) + " | build " +
                     opencl_build(Env::posix());
  Target target =
      target_of(device_string(cl, device, CL_DEVICE_NAME),
                static_cast<int>(device_value<cl_uint>(cl, device, CL_DEVICE_MAX_COMPUTE_UNITS)));
  CompilerInputs inputs;
  inputs.dialect = "opencl";
  inputs.one_option_string = true;
  inputs.harmless_options = config.harmless_options;
  inputs.environment = output_environment();
  // PoCL appends POCL_EXTRA_BUILD_FLAGS to every build's options (after
  // them: checked with PoCL 3.1); its include folders join the search.
  for (const auto& [name, value] : inputs.environment) {
    if (name != "POCL_EXTRA_BUILD_FLAGS") continue;
    if (auto extra = split_options(value)) inputs.trailing_options = std::move(*extra);
  }
  return std::unique_ptr<Compiler>(std::make_unique<OpenClCompiler>(
      *loaded, context, device, std::move(identity), std::move(target), std::move(inputs)));
}

}  // namespace kcache
