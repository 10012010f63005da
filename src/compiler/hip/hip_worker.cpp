// kcache-hip-worker: runs hipRTC for the hip backend in a process of its
// own, so that a compiler abort (ROCm 5.2 on gfx1100) ends this process and
// not the program that uses kcache. hip_protocol.h describes the protocol.
//
// libamdhip64 (which holds hipRTC in ROCm 5) is loaded with dlopen; it loads
// comgr, the compiler proper, on its first program. The few hipRTC and comgr
// C declarations used are written out here rather than taken from hiprtc.h
// and amd_comgr.h, so kcache builds on machines without ROCm.
#include <dlfcn.h>
#include <link.h>
#include <sys/resource.h>
#include <sys/stat.h>

#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>
#include <vector>

#include "compiler/hip/hip_protocol.h"

namespace kcache::hip {
namespace {

// From hip/hiprtc.h (ROCm 5).
using hiprtcResult = int;
using hiprtcProgram = struct _hiprtcProgram*;
constexpr hiprtcResult HIPRTC_SUCCESS = 0;
constexpr hiprtcResult HIPRTC_ERROR_INVALID_OPTION = 5;
constexpr hiprtcResult HIPRTC_ERROR_COMPILATION = 6;

// From amd_comgr.h (comgr 2).
using amd_comgr_status_t = int;
struct amd_comgr_metadata_node_t {
  std::uint64_t handle;
};
constexpr amd_comgr_status_t AMD_COMGR_STATUS_SUCCESS = 0;
constexpr int AMD_COMGR_METADATA_KIND_MAP = 2;

struct HiprtcApi {
  std::string path;
  const char* (*GetErrorString)(hiprtcResult) = nullptr;
  hiprtcResult (*Version)(int*, int*) = nullptr;
  hiprtcResult (*CreateProgram)(hiprtcProgram*, const char*, const char*, int, const char**,
                                const char**) = nullptr;
  hiprtcResult (*DestroyProgram)(hiprtcProgram*) = nullptr;
  hiprtcResult (*CompileProgram)(hiprtcProgram, int, const char**) = nullptr;
  hiprtcResult (*GetCodeSize)(hiprtcProgram, std::size_t*) = nullptr;
  hiprtcResult (*GetCode)(hiprtcProgram, char*) = nullptr;
  hiprtcResult (*GetProgramLogSize)(hiprtcProgram, std::size_t*) = nullptr;
  hiprtcResult (*GetProgramLog)(hiprtcProgram, char*) = nullptr;
  hiprtcResult (*AddNameExpression)(hiprtcProgram, const char*) = nullptr;
  hiprtcResult (*GetLoweredName)(hiprtcProgram, const char*, const char**) = nullptr;

  std::string error(hiprtcResult rc) const {
    const char* text = GetErrorString ? GetErrorString(rc) : nullptr;
    return text ? text : "hipRTC error " + std::to_string(rc);
  }
};

template <class Function>
bool bind(void* handle, const char* symbol, Function*& out, std::string& missing) {
  out = reinterpret_cast<Function*>(::dlsym(handle, symbol));
  if (out == nullptr) missing += (missing.empty() ? "" : ", ") + std::string(symbol);
  return out != nullptr;
}

std::string loaded_path(void* handle, const std::string& fallback) {
  struct link_map* map = nullptr;
  if (::dlinfo(handle, RTLD_DI_LINKMAP, &map) == 0 && map != nullptr && map->l_name != nullptr &&
      map->l_name[0] != '\0') {
    return map->l_name;
  }
  return fallback;
}

// Loads the first candidate that has every hipRTC entry point. The library
// is never closed: the process ends after one request.
bool load_hiprtc(const std::vector<std::string>& candidates, HiprtcApi& api, std::string& why) {
  for (const auto& name : candidates) {
    void* handle = ::dlopen(name.c_str(), RTLD_NOW | RTLD_LOCAL);
    if (handle == nullptr) {
      const char* error = ::dlerror();
      why += (why.empty() ? "" : "; ") + (error ? std::string(error) : name);
      continue;
    }
    std::string missing;
    bind(handle, "hiprtcGetErrorString", api.GetErrorString, missing);
    bind(handle, "hiprtcVersion", api.Version, missing);
    bind(handle, "hiprtcCreateProgram", api.CreateProgram, missing);
    bind(handle, "hiprtcDestroyProgram", api.DestroyProgram, missing);
    bind(handle, "hiprtcCompileProgram", api.CompileProgram, missing);
    bind(handle, "hiprtcGetCodeSize", api.GetCodeSize, missing);
    bind(handle, "hiprtcGetCode", api.GetCode, missing);
    bind(handle, "hiprtcGetProgramLogSize", api.GetProgramLogSize, missing);
    bind(handle, "hiprtcGetProgramLog", api.GetProgramLog, missing);
    bind(handle, "hiprtcAddNameExpression", api.AddNameExpression, missing);
    bind(handle, "hiprtcGetLoweredName", api.GetLoweredName, missing);
    if (!missing.empty()) {
      why += (why.empty() ? "" : "; ") + name + " has no " + missing;
      continue;
    }
    api.path = loaded_path(handle, name);
    return true;
  }
  if (candidates.empty()) why = "no library named";
  return false;
}

std::string file_size(const std::string& path) {
  struct stat st {};
  if (::stat(path.c_str(), &st) != 0) return "0";
  return std::to_string(st.st_size);
}

Records failure(const std::string& status, const std::string& message) {
  Records result;
  result.add("status", status);
  result.add("message", message);
  return result;
}

// The path of the loaded object whose file name holds `needle`, or "".
std::string loaded_object(const char* needle) {
  struct Search {
    const char* needle;
    std::string path;
  } search{needle, {}};
  ::dl_iterate_phdr(
      [](struct dl_phdr_info* info, std::size_t, void* data) {
        auto* s = static_cast<Search*>(data);
        if (info->dlpi_name != nullptr && std::strstr(info->dlpi_name, s->needle) != nullptr) {
          s->path = info->dlpi_name;
          return 1;
        }
        return 0;
      },
      &search);
  return search.path;
}

// comgr's version and the ISAs it can compile for, each with the target-id
// features (xnack, sramecc) it takes. Adds nothing when comgr is not found.
void describe_comgr(Records& result) {
  const std::string path = loaded_object("libamd_comgr");
  if (path.empty()) return;
  void* handle = ::dlopen(path.c_str(), RTLD_NOW | RTLD_NOLOAD);
  if (handle == nullptr) return;
  void (*get_version)(std::size_t*, std::size_t*) = nullptr;
  amd_comgr_status_t (*get_isa_count)(std::size_t*) = nullptr;
  amd_comgr_status_t (*get_isa_name)(std::size_t, const char**) = nullptr;
  amd_comgr_status_t (*get_isa_metadata)(const char*, amd_comgr_metadata_node_t*) = nullptr;
  amd_comgr_status_t (*lookup)(amd_comgr_metadata_node_t, const char*, amd_comgr_metadata_node_t*) =
      nullptr;
  amd_comgr_status_t (*get_kind)(amd_comgr_metadata_node_t, int*) = nullptr;
  amd_comgr_status_t (*iterate_map)(
      amd_comgr_metadata_node_t,
      amd_comgr_status_t(*)(amd_comgr_metadata_node_t, amd_comgr_metadata_node_t, void*), void*) =
      nullptr;
  amd_comgr_status_t (*get_string)(amd_comgr_metadata_node_t, std::size_t*, char*) = nullptr;
  amd_comgr_status_t (*destroy)(amd_comgr_metadata_node_t) = nullptr;
  std::string missing;
  bind(handle, "amd_comgr_get_version", get_version, missing);
  bind(handle, "amd_comgr_get_isa_count", get_isa_count, missing);
  bind(handle, "amd_comgr_get_isa_name", get_isa_name, missing);
  bind(handle, "amd_comgr_get_isa_metadata", get_isa_metadata, missing);
  bind(handle, "amd_comgr_metadata_lookup", lookup, missing);
  bind(handle, "amd_comgr_get_metadata_kind", get_kind, missing);
  bind(handle, "amd_comgr_iterate_map_metadata", iterate_map, missing);
  bind(handle, "amd_comgr_get_metadata_string", get_string, missing);
  bind(handle, "amd_comgr_destroy_metadata", destroy, missing);
  if (!missing.empty()) return;

  std::size_t major = 0;
  std::size_t minor = 0;
  get_version(&major, &minor);
  result.add("comgr_path", path);
  result.add("comgr_bytes", file_size(path));
  result.add("comgr_version", std::to_string(major) + "." + std::to_string(minor));

  std::size_t count = 0;
  if (get_isa_count(&count) != AMD_COMGR_STATUS_SUCCESS) return;
  for (std::size_t i = 0; i < count; ++i) {
    const char* name = nullptr;
    if (get_isa_name(i, &name) != AMD_COMGR_STATUS_SUCCESS || name == nullptr) continue;
    // "amdgcn-amd-amdhsa--gfx906" -> "gfx906"
    std::string isa = name;
    const std::size_t dashes = isa.rfind("--");
    std::string line = dashes == std::string::npos ? isa : isa.substr(dashes + 2);
    line = line.substr(0, line.find(':'));  // the processor, without features
    amd_comgr_metadata_node_t metadata{};
    if (get_isa_metadata(name, &metadata) == AMD_COMGR_STATUS_SUCCESS) {
      amd_comgr_metadata_node_t features{};
      int kind = 0;
      if (lookup(metadata, "Features", &features) == AMD_COMGR_STATUS_SUCCESS) {
        if (get_kind(features, &kind) == AMD_COMGR_STATUS_SUCCESS &&
            kind == AMD_COMGR_METADATA_KIND_MAP) {
          struct Collect {
            decltype(get_string) string_of;
            std::string* line;
          } collect{get_string, &line};
          iterate_map(
              features,
              [](amd_comgr_metadata_node_t key, amd_comgr_metadata_node_t, void* data) {
                auto* c = static_cast<Collect*>(data);
                std::size_t size = 0;
                if (c->string_of(key, &size, nullptr) != AMD_COMGR_STATUS_SUCCESS || size == 0) {
                  return AMD_COMGR_STATUS_SUCCESS;
                }
                std::string text(size, '\0');
                if (c->string_of(key, &size, text.data()) == AMD_COMGR_STATUS_SUCCESS) {
                  text.resize(std::strlen(text.c_str()));
                  *c->line += " " + text;
                }
                return AMD_COMGR_STATUS_SUCCESS;
              },
              &collect);
        }
        destroy(features);
      }
      destroy(metadata);
    }
    result.add("isa", line);
  }
}

Records probe(const Records& request) {
  HiprtcApi api;
  std::string why;
  if (!load_hiprtc(request.all("library"), api, why)) return failure("unavailable", why);
  int major = 0;
  int minor = 0;
  if (api.Version(&major, &minor) != HIPRTC_SUCCESS) {
    return failure("unavailable", api.path + ": hiprtcVersion failed");
  }
  Records result;
  result.add("status", "ok");
  result.add("library_path", api.path);
  result.add("library_bytes", file_size(api.path));
  result.add("hiprtc_version", std::to_string(major) + "." + std::to_string(minor));
  // hipRTC loads comgr when it makes its first program.
  hiprtcProgram program = nullptr;
  if (api.CreateProgram(&program, "// kcache probe\n", "probe.hip", 0, nullptr, nullptr) ==
      HIPRTC_SUCCESS) {
    api.DestroyProgram(&program);
  }
  describe_comgr(result);
  return result;
}

// comgr names the source after its temporary folder, which is gone by the
// time anyone reads the log: "<TMPDIR>/comgr-1a2b3c/input/CompileSource:3:5"
// reads better as "CompileSource:3:5".
std::string tidy_log(std::string log) {
  const char* tmpdir = std::getenv("TMPDIR");
  if (tmpdir == nullptr || tmpdir[0] == '\0') return log;
  const std::string prefix = std::string(tmpdir) + "/comgr-";
  for (std::size_t pos = log.find(prefix); pos != std::string::npos; pos = log.find(prefix, pos)) {
    const std::size_t input = log.find("/input/", pos + prefix.size());
    if (input == std::string::npos || input - pos > prefix.size() + 32) break;
    log.erase(pos, input + 7 - pos);
  }
  return log;
}

Records compile(const Records& request) {
  HiprtcApi api;
  std::string why;
  if (!load_hiprtc(request.all("library"), api, why)) return failure("unavailable", why);

  const std::string source = request.first("source").value_or("");
  std::vector<std::string> header_names;
  std::vector<std::string> header_contents;
  for (const auto& [name, value] : request.fields()) {
    if (name == "header_name") header_names.push_back(value);
    if (name == "header_content") header_contents.push_back(value);
  }
  if (header_names.size() != header_contents.size()) {
    return failure("internal", "the request has unpaired header fields");
  }
  std::vector<const char*> names;
  std::vector<const char*> contents;
  for (std::size_t i = 0; i < header_names.size(); ++i) {
    names.push_back(header_names[i].c_str());
    contents.push_back(header_contents[i].c_str());
  }

  hiprtcProgram program = nullptr;
  hiprtcResult rc =
      api.CreateProgram(&program, source.c_str(), "kcache_kernel.hip",
                        static_cast<int>(names.size()), contents.data(), names.data());
  if (rc != HIPRTC_SUCCESS) return failure("internal", "hiprtcCreateProgram: " + api.error(rc));
  struct Destroyer {
    const HiprtcApi& api;
    hiprtcProgram program;
    ~Destroyer() { api.DestroyProgram(&program); }
  } destroy{api, program};

  const std::vector<std::string> expressions = request.all("name_expression");
  for (const auto& expression : expressions) {
    rc = api.AddNameExpression(program, expression.c_str());
    if (rc != HIPRTC_SUCCESS) {
      return failure("invalid_argument",
                     "kernel name expression '" + expression + "': " + api.error(rc));
    }
  }
  const std::vector<std::string> options = request.all("option");
  std::vector<const char*> argv;
  for (const auto& option : options) argv.push_back(option.c_str());
  rc = api.CompileProgram(program, static_cast<int>(argv.size()), argv.data());

  std::string log;
  std::size_t log_size = 0;
  if (api.GetProgramLogSize(program, &log_size) == HIPRTC_SUCCESS && log_size > 1) {
    log.assign(log_size, '\0');
    if (api.GetProgramLog(program, log.data()) == HIPRTC_SUCCESS) {
      log.resize(std::strlen(log.c_str()));
    } else {
      log.clear();
    }
  }
  log = tidy_log(std::move(log));
  if (rc != HIPRTC_SUCCESS) {
    Records result =
        failure("compile_error", rc == HIPRTC_ERROR_COMPILATION ? "the hipRTC compile failed"
                                 : rc == HIPRTC_ERROR_INVALID_OPTION
                                     ? "hipRTC rejected an option"
                                     : "hiprtcCompileProgram: " + api.error(rc));
    result.add("log", log);
    return result;
  }

  std::size_t size = 0;
  rc = api.GetCodeSize(program, &size);
  if (rc != HIPRTC_SUCCESS || size == 0) {
    return failure("internal", "hipRTC returned no code object: " + api.error(rc));
  }
  std::string code(size, '\0');
  rc = api.GetCode(program, code.data());
  if (rc != HIPRTC_SUCCESS) return failure("internal", "hiprtcGetCode: " + api.error(rc));

  Records result;
  result.add("status", "ok");
  result.add("log", log);
  result.add("code", std::move(code));
  for (const auto& expression : expressions) {
    const char* lowered = nullptr;
    if (api.GetLoweredName(program, expression.c_str(), &lowered) == HIPRTC_SUCCESS && lowered) {
      result.add("lowered", std::string(lowered) + " " + expression);
    }
  }
  return result;
}

int run(int argc, char** argv) {
  const std::string command = argc == 3 ? argv[1] : "";
  if (command != "probe" && command != "compile") {
    std::fprintf(stderr,
                 "usage: kcache-hip-worker probe|compile FOLDER\n"
                 "Runs hipRTC for the kcache library; not meant to be run by hand.\n");
    return 2;
  }
  const std::string folder = argv[2];
  // A crash here is expected now and then (that is why this process
  // exists); it must not drop a core file into the caller's folder.
  const struct rlimit no_core {};
  ::setrlimit(RLIMIT_CORE, &no_core);
  // comgr writes its temporaries under TMPDIR; the caller removes FOLDER,
  // and with it whatever a crash leaves behind.
  const std::string tmpdir = folder + "/" + kTempSubfolder;
  ::setenv("TMPDIR", tmpdir.c_str(), 1);

  auto bytes = read_file(folder + "/" + kRequestFile);
  auto request = bytes ? Records::decode(*bytes) : std::nullopt;
  if (!request) {
    std::fprintf(stderr, "kcache-hip-worker: cannot read %s/%s\n", folder.c_str(), kRequestFile);
    return 2;
  }
  if (request->first("protocol") != std::string(kHipProtocolVersion)) {
    std::fprintf(stderr, "kcache-hip-worker: the request speaks protocol %s, this worker %s\n",
                 request->first("protocol").value_or("?").c_str(),
                 std::string(kHipProtocolVersion).c_str());
    return 2;
  }
  Records result = command == "probe" ? probe(*request) : compile(*request);
  if (!write_file_atomic(folder + "/" + kResultFile, result.encode())) {
    std::fprintf(stderr, "kcache-hip-worker: cannot write %s/%s\n", folder.c_str(), kResultFile);
    return 3;
  }
  return 0;
}

}  // namespace
}  // namespace kcache::hip

int main(int argc, char** argv) { return kcache::hip::run(argc, argv); }
