// The C API: a thin shell over the C++ API that never lets an exception or
// a C++ type cross into the caller. Caches, compilers, kernels and the
// counts as a struct; client-keyed entries are in c_api_entries.cpp, the
// counts as JSON in c_api_stats_json.cpp.
#include <kcache/admin.h>
#include <kcache/c_api.h>
#include <kcache/cache.h>
#include <kcache/version.h>

#include <algorithm>
#include <chrono>
#include <cstdlib>
#include <cstring>
#include <limits>
#include <new>

#include "c_api/c_api_internal.h"
#include "c_api/sized_struct.h"

namespace kcache::c_api {
namespace {

#define KCACHE_C_STATUS(name, code) static_assert(name == static_cast<int>(StatusCode::code))
KCACHE_C_STATUS(KCACHE_OK, kOk);
KCACHE_C_STATUS(KCACHE_INVALID_ARGUMENT, kInvalidArgument);
KCACHE_C_STATUS(KCACHE_NOT_FOUND, kNotFound);
KCACHE_C_STATUS(KCACHE_COMPILE_ERROR, kCompileError);
KCACHE_C_STATUS(KCACHE_IO_ERROR, kIoError);
KCACHE_C_STATUS(KCACHE_CORRUPTION, kCorruption);
KCACHE_C_STATUS(KCACHE_TIMEOUT, kTimeout);
KCACHE_C_STATUS(KCACHE_UNAVAILABLE, kUnavailable);
KCACHE_C_STATUS(KCACHE_NOT_SUPPORTED, kNotSupported);
KCACHE_C_STATUS(KCACHE_INTERNAL, kInternal);
#undef KCACHE_C_STATUS
constexpr int kLastStatus = KCACHE_INTERNAL;

static_assert(KCACHE_LOG_ERROR == static_cast<int>(LogLevel::kError));
static_assert(KCACHE_LOG_WARNING == static_cast<int>(LogLevel::kWarning));
static_assert(KCACHE_LOG_INFO == static_cast<int>(LogLevel::kInfo));
static_assert(KCACHE_LOG_DEBUG == static_cast<int>(LogLevel::kDebug));

// The layouts of the sized structs, field by field: a field appended to
// the header is appended here (packed_in_eights below fails the build
// when one is missed), and to the reading below.
#define F(field) KCACHE_C_FIELD_END(kcache_cache_options, field)
constexpr SizedLayout<kcache_cache_options, 19> kCacheOptionsLayout{
    "kcache_cache_options",
    {F(size), F(cache_dir), F(system_db_path), F(disable_cache), F(log_level), F(memory_cache_size),
     F(compression), F(max_size), F(max_entries), F(max_age), F(lock_timeout), F(failure_ttl),
     F(record_path), F(trusted_keys), F(sync), F(shared_cache), F(read_environment),
     F(log_function), F(log_context)},
    1};
#undef F
#define F(field) KCACHE_C_FIELD_END(kcache_compiler_config, field)
constexpr SizedLayout<kcache_compiler_config, 16> kCompilerConfigLayout{
    "kcache_compiler_config",
    {F(size), F(backend), F(command), F(compiler_id), F(command_input_name), F(opencl_platform),
     F(opencl_device), F(opencl_context), F(opencl_device_id), F(harmless_options),
     F(harmless_option_count), F(facts_dir), F(nvrtc_library), F(nvrtc_toolkit_include),
     F(hip_library), F(timeout_ms)},
    2};  // backend
#undef F
#define F(field) KCACHE_C_FIELD_END(kcache_kernel_request, field)
constexpr SizedLayout<kcache_kernel_request, 13> kKernelRequestLayout{
    "kcache_kernel_request",
    {F(size), F(source), F(kernel_names), F(kernel_name_count), F(options), F(header_names),
     F(header_contents), F(header_count), F(include_dirs), F(include_dir_count), F(source_name),
     F(target), F(keep_in_memory)},
    2};  // source
#undef F
// Where pointers and 64-bit integers are 8 bytes (LP64), each version of a
// struct has no padding at all.
static_assert(sizeof(void*) != 8 || packed_in_eights(kCacheOptionsLayout));
static_assert(sizeof(void*) != 8 || packed_in_eights(kCompilerConfigLayout));
static_assert(sizeof(void*) != 8 || packed_in_eights(kKernelRequestLayout));

std::optional<std::string> text_of(const char* text) {
  if (text == nullptr) return std::nullopt;
  return std::string(text);
}

std::optional<bool> tri_state(std::int64_t value) {
  if (value == KCACHE_DEFAULT) return std::nullopt;
  return value > 0;
}

Result<CacheOptions> cache_options_of(const kcache_cache_options& in) {
  CacheOptions out;
  out.cache_dir = text_of(in.cache_dir);
  out.system_db_path = text_of(in.system_db_path);
  out.disable_cache = tri_state(in.disable_cache);
  if (in.log_level != nullptr) {
    for (LogLevel level : {LogLevel::kQuiet, LogLevel::kError, LogLevel::kWarning, LogLevel::kInfo,
                           LogLevel::kDebug}) {
      if (log_level_name(level) == in.log_level) out.log_level = level;
    }
    if (!out.log_level) {
      return Status::invalid_argument(std::string("kcache_cache_options.log_level: '") +
                                      in.log_level +
                                      "' is none of quiet, error, warning, info, debug");
    }
  }
  // Sizes, counts and durations, as their environment variables take
  // them; the first malformed one is the answer.
  Status malformed;
  const auto number = [&](const char* text, const char* field,
                          std::optional<std::uint64_t> (*parse)(std::string_view)) {
    std::optional<std::uint64_t> value;
    if (text == nullptr || !malformed.is_ok()) return value;
    value = parse(text);
    if (!value) {
      malformed = Status::invalid_argument(std::string("kcache_cache_options.") + field + ": '" +
                                           text + "' is malformed");
    }
    return value;
  };
  out.memory_cache_size = number(in.memory_cache_size, "memory_cache_size", parse_size);
  out.max_size = number(in.max_size, "max_size", parse_size);
  out.max_entries = number(in.max_entries, "max_entries", parse_count);
  if (auto ms = number(in.max_age, "max_age", parse_duration_ms)) {
    out.max_age = std::chrono::seconds(*ms / 1000);
  }
  if (auto ms = number(in.lock_timeout, "lock_timeout", parse_duration_ms)) {
    out.lock_timeout = std::chrono::milliseconds(*ms);
  }
  if (auto ms = number(in.failure_ttl, "failure_ttl", parse_duration_ms)) {
    out.failure_ttl = std::chrono::milliseconds(*ms);
  }
  if (!malformed.is_ok()) return malformed;
  out.compression = text_of(in.compression);
  out.record_path = text_of(in.record_path);
  out.trusted_keys = text_of(in.trusted_keys);
  out.sync = tri_state(in.sync);
  out.shared_cache = tri_state(in.shared_cache);
  out.read_environment = tri_state(in.read_environment).value_or(true);
  if (in.log_function != nullptr) {
    out.log_sink = [function = in.log_function, context = in.log_context](LogLevel level,
                                                                          std::string_view line) {
      try {
        const std::string text(line);  // NUL-terminated for C
        function(context, static_cast<int>(level), text.c_str());
      } catch (...) {  // out of memory: the line is lost, not the program
      }
    };
  }
  return out;
}

int open_cache(const CacheOptions& options, kcache_cache** out, char** error) {
  auto cache = Cache::open(options);
  if (!cache) return fail(cache.status(), error);
  *out = new kcache_cache{std::move(*cache)};
  return succeed(error);
}

Result<CompilerConfig> compiler_config_of(const kcache_compiler_config& in) {
  if (in.backend == nullptr)
    return Status::invalid_argument("kcache_compiler_config.backend is NULL");
  CompilerConfig out;
  out.backend = in.backend;
  if (in.command != nullptr) out.command = in.command;
  if (in.compiler_id != nullptr) out.compiler_id = in.compiler_id;
  if (in.command_input_name != nullptr) out.command_input_name = in.command_input_name;
  if (in.opencl_platform < 0 || in.opencl_device < 0 ||
      in.opencl_platform > std::numeric_limits<int>::max() ||
      in.opencl_device > std::numeric_limits<int>::max()) {
    return Status::invalid_argument(
        "kcache_compiler_config.opencl_platform and opencl_device count from 1 (0: the first)");
  }
  out.opencl_platform = in.opencl_platform == 0 ? -1 : static_cast<int>(in.opencl_platform - 1);
  out.opencl_device = in.opencl_device == 0 ? 0 : static_cast<int>(in.opencl_device - 1);
  out.opencl_context = in.opencl_context;
  out.opencl_device_id = in.opencl_device_id;
  auto harmless = strings_of(in.harmless_options, in.harmless_option_count,
                             "kcache_compiler_config.harmless_options");
  if (!harmless) return harmless.status();
  out.harmless_options = std::move(*harmless);
  if (in.facts_dir != nullptr) out.facts_dir = in.facts_dir;
  if (in.nvrtc_library != nullptr) out.nvrtc_library = in.nvrtc_library;
  out.nvrtc_toolkit_include = tri_state(in.nvrtc_toolkit_include).value_or(true);
  if (in.hip_library != nullptr) out.hip_library = in.hip_library;
  if (in.timeout_ms < 0) {
    out.timeout = std::chrono::milliseconds(0);
  } else if (in.timeout_ms > 0) {
    out.timeout = std::chrono::milliseconds(in.timeout_ms);
  }
  return out;
}

int make_compiler_handle(const CompilerConfig& config, kcache_compiler** out, char** error) {
  auto compiler = make_compiler(config);
  if (!compiler) return fail(compiler.status(), error);
  *out = new kcache_compiler{std::move(*compiler)};
  return succeed(error);
}

Result<KernelRequest> kernel_request_of(const kcache_kernel_request& in) {
  if (in.source == nullptr) return Status::invalid_argument("kcache_kernel_request.source is NULL");
  KernelRequest out;
  out.source = in.source;
  auto names =
      strings_of(in.kernel_names, in.kernel_name_count, "kcache_kernel_request.kernel_names");
  if (!names) return names.status();
  out.kernel_names = std::move(*names);
  if (in.options != nullptr) out.options = in.options;
  auto header_names =
      strings_of(in.header_names, in.header_count, "kcache_kernel_request.header_names");
  if (!header_names) return header_names.status();
  auto header_contents =
      strings_of(in.header_contents, in.header_count, "kcache_kernel_request.header_contents");
  if (!header_contents) return header_contents.status();
  for (std::size_t i = 0; i < in.header_count; ++i) {
    out.headers.push_back({std::move((*header_names)[i]), std::move((*header_contents)[i])});
  }
  auto dirs =
      strings_of(in.include_dirs, in.include_dir_count, "kcache_kernel_request.include_dirs");
  if (!dirs) return dirs.status();
  out.include_dirs = std::move(*dirs);
  out.source_name = text_of(in.source_name);
  if (in.target != nullptr && in.target[0] != '\0') {
    auto target = Target::parse(in.target);
    if (!target) return target.status();
    out.target = *target;
  }
  return out;
}

int fetch_kernel(kcache_cache* cache, kcache_compiler* compiler, const KernelRequest& request,
                 const GetOptions& options, kcache_kernel** out, char** error) {
  auto kernel = cache->cache->get_or_compile(request, *compiler->compiler, options);
  if (!kernel) return fail(kernel.status(), error);
  auto handle = std::make_unique<kcache_kernel>();
  handle->key_hex = kernel->key.hex();
  handle->target = kernel->target.to_string();
  // Each "lowered" field is "<symbol> <name expression>": the expressions
  // are read here, their symbols from the kernel, which owns the format.
  for (const auto& [name, value] : kernel->metadata_fields) {
    const std::size_t space = value.find(' ');
    if (name != "lowered" || space == std::string::npos) continue;
    std::string expression = value.substr(space + 1);
    std::string symbol = kernel->lowered_name(expression);
    handle->lowered.emplace(std::move(expression), std::move(symbol));
  }
  handle->kernel = std::move(*kernel);
  *out = handle.release();
  return succeed(error);
}

}  // namespace

Result<std::vector<std::string>> strings_of(const char* const* array, std::size_t count,
                                            std::string_view what) {
  std::vector<std::string> out;
  if (count == 0) return out;
  if (array == nullptr) {
    return Status::invalid_argument(std::string(what) + " is NULL, with a count of " +
                                    std::to_string(count));
  }
  out.reserve(count);
  for (std::size_t i = 0; i < count; ++i) {
    if (array[i] == nullptr) {
      return Status::invalid_argument(std::string(what) + "[" + std::to_string(i) + "] is NULL");
    }
    out.emplace_back(array[i]);
  }
  return out;
}

const char* metadata_value(const CachedKernel& kernel, const char* name) {
  if (name == nullptr) return nullptr;
  for (const auto& [field, value] : kernel.metadata_fields) {
    if (field == name) return value.c_str();
  }
  return nullptr;
}

const char* metadata_name_at(const CachedKernel& kernel, std::size_t index) {
  return index < kernel.metadata_fields.size() ? kernel.metadata_fields[index].first.c_str()
                                               : nullptr;
}

const char* metadata_value_at(const CachedKernel& kernel, std::size_t index) {
  return index < kernel.metadata_fields.size() ? kernel.metadata_fields[index].second.c_str()
                                               : nullptr;
}

}  // namespace kcache::c_api

using kcache::c_api::fail;
using kcache::c_api::guarded;
using kcache::c_api::invalid;
using kcache::c_api::succeed;

extern "C" {

// ---- Common -----------------------------------------------------------------

void kcache_string_free(char* text) { std::free(text); }

const char* kcache_version(void) { return KCACHE_VERSION_STRING; }

const char* kcache_status_name(int code) {
  if (code < 0 || code > kcache::c_api::kLastStatus) return "unknown";
  return kcache::status_code_name(static_cast<kcache::StatusCode>(code)).data();
}

size_t kcache_struct_size(int which) {
  switch (which) {
    case KCACHE_STRUCT_CACHE_OPTIONS:
      return sizeof(kcache_cache_options);
    case KCACHE_STRUCT_COMPILER_CONFIG:
      return sizeof(kcache_compiler_config);
    case KCACHE_STRUCT_KERNEL_REQUEST:
      return sizeof(kcache_kernel_request);
    case KCACHE_STRUCT_STATS:
      return sizeof(kcache_stats);
    default:
      return 0;
  }
}

// ---- Caches -----------------------------------------------------------------

int kcache_cache_open(const kcache_cache_options* options, kcache_cache** out, char** error) {
  return guarded(error, [&] {
    if (out == nullptr) return invalid("out is NULL", error);
    *out = nullptr;
    kcache::CacheOptions cpp;
    if (options != nullptr) {
      auto read = kcache::c_api::read_sized(options, kcache::c_api::kCacheOptionsLayout);
      if (!read) return fail(read.status(), error);
      auto converted = kcache::c_api::cache_options_of(*read);
      if (!converted) return fail(converted.status(), error);
      cpp = std::move(*converted);
    }
    return kcache::c_api::open_cache(cpp, out, error);
  });
}

int kcache_open(const kcache_options* options, kcache_cache** out, char** error) {
  return guarded(error, [&] {
    if (out == nullptr) return invalid("out is NULL", error);
    kcache::CacheOptions cpp;
    if (options != nullptr) {
      if (options->cache_dir != nullptr) cpp.cache_dir = options->cache_dir;
      if (options->system_db_path != nullptr) cpp.system_db_path = options->system_db_path;
      if (options->disable_cache != 0) cpp.disable_cache = true;
    }
    return kcache::c_api::open_cache(cpp, out, error);
  });
}

void kcache_close(kcache_cache* cache) { delete cache; }

// ---- Compilers --------------------------------------------------------------

int kcache_compiler_new(const kcache_compiler_config* config, kcache_compiler** out, char** error) {
  return guarded(error, [&] {
    if (config == nullptr || out == nullptr) return invalid("config and out are required", error);
    *out = nullptr;
    auto read = kcache::c_api::read_sized(config, kcache::c_api::kCompilerConfigLayout);
    if (!read) return fail(read.status(), error);
    auto converted = kcache::c_api::compiler_config_of(*read);
    if (!converted) return fail(converted.status(), error);
    return kcache::c_api::make_compiler_handle(*converted, out, error);
  });
}

int kcache_compiler_create(const char* backend, const char* command, const char* compiler_id,
                           kcache_compiler** out, char** error) {
  return guarded(error, [&] {
    if (backend == nullptr || out == nullptr) {
      return invalid("backend and out are required", error);
    }
    kcache::CompilerConfig config;
    config.backend = backend;
    if (command != nullptr) config.command = command;
    if (compiler_id != nullptr) config.compiler_id = compiler_id;
    return kcache::c_api::make_compiler_handle(config, out, error);
  });
}

void kcache_compiler_free(kcache_compiler* compiler) { delete compiler; }

const char* kcache_compiler_backend(const kcache_compiler* compiler) {
  return compiler != nullptr ? compiler->compiler->identity().backend.c_str() : "";
}

const char* kcache_compiler_id(const kcache_compiler* compiler) {
  return compiler != nullptr ? compiler->compiler->identity().id.c_str() : "";
}

const char* kcache_compiler_version(const kcache_compiler* compiler) {
  return compiler != nullptr ? compiler->compiler->identity().version.c_str() : "";
}

const char* kcache_compiler_backends(void) {
  try {
    static const std::string names = [] {
      std::string joined;
      for (const std::string& name : kcache::compiler_backends()) {
        joined += (joined.empty() ? "" : ",") + name;
      }
      return joined;
    }();
    return names.c_str();
  } catch (...) {  // out of memory on the first call: a later call tries again
    return "";
  }
}

// ---- Kernels ----------------------------------------------------------------

int kcache_kernel_get_or_compile(kcache_cache* cache, kcache_compiler* compiler,
                                 const kcache_kernel_request* request, kcache_kernel** out,
                                 char** error) {
  return guarded(error, [&] {
    if (cache == nullptr || compiler == nullptr || request == nullptr || out == nullptr) {
      return invalid("cache, compiler, request and out are required", error);
    }
    *out = nullptr;
    auto read = kcache::c_api::read_sized(request, kcache::c_api::kKernelRequestLayout);
    if (!read) return fail(read.status(), error);
    auto cpp = kcache::c_api::kernel_request_of(*read);
    if (!cpp) return fail(cpp.status(), error);
    kcache::GetOptions options;
    options.keep_in_memory = kcache::c_api::tri_state(read->keep_in_memory).value_or(true);
    return kcache::c_api::fetch_kernel(cache, compiler, *cpp, options, out, error);
  });
}

int kcache_get_or_compile(kcache_cache* cache, kcache_compiler* compiler,
                          const kcache_request* request, kcache_kernel** out, char** error) {
  return guarded(error, [&] {
    if (cache == nullptr || compiler == nullptr || request == nullptr || out == nullptr ||
        request->source == nullptr) {
      return invalid("cache, compiler, request, request->source and out are required", error);
    }
    kcache::KernelRequest cpp;
    cpp.source = request->source;
    if (request->kernel_name != nullptr) cpp.kernel_names.emplace_back(request->kernel_name);
    if (request->options != nullptr) cpp.options = request->options;
    if (request->target != nullptr && request->target[0] != '\0') {
      auto target = kcache::Target::parse(request->target);
      if (!target) return fail(target.status(), error);
      cpp.target = *target;
    }
    return kcache::c_api::fetch_kernel(cache, compiler, cpp, {}, out, error);
  });
}

const uint8_t* kcache_kernel_data(const kcache_kernel* kernel) {
  return kernel != nullptr ? kernel->kernel.binary().data() : nullptr;
}

size_t kcache_kernel_size(const kcache_kernel* kernel) {
  return kernel != nullptr ? kernel->kernel.binary().size() : 0;
}

const char* kcache_kernel_tier(const kcache_kernel* kernel) {
  return kernel != nullptr ? kcache::tier_name(kernel->kernel.tier).data() : "";
}

const char* kcache_kernel_key(const kcache_kernel* kernel) {
  return kernel != nullptr ? kernel->key_hex.c_str() : "";
}

const char* kcache_kernel_target(const kcache_kernel* kernel) {
  return kernel != nullptr ? kernel->target.c_str() : "";
}

const char* kcache_kernel_db(const kcache_kernel* kernel) {
  return kernel != nullptr ? kernel->kernel.db.c_str() : "";
}

const char* kcache_kernel_compile_log(const kcache_kernel* kernel) {
  return kernel != nullptr ? kernel->kernel.compile_log.c_str() : "";
}

const char* kcache_kernel_metadata(const kcache_kernel* kernel, const char* name) {
  return kernel != nullptr ? kcache::c_api::metadata_value(kernel->kernel, name) : nullptr;
}

size_t kcache_kernel_metadata_count(const kcache_kernel* kernel) {
  return kernel != nullptr ? kernel->kernel.metadata_fields.size() : 0;
}

const char* kcache_kernel_metadata_name(const kcache_kernel* kernel, size_t index) {
  return kernel != nullptr ? kcache::c_api::metadata_name_at(kernel->kernel, index) : nullptr;
}

const char* kcache_kernel_metadata_value(const kcache_kernel* kernel, size_t index) {
  return kernel != nullptr ? kcache::c_api::metadata_value_at(kernel->kernel, index) : nullptr;
}

const char* kcache_kernel_lowered_name(const kcache_kernel* kernel, const char* name_expression) {
  if (kernel == nullptr || name_expression == nullptr) return nullptr;
  auto found = kernel->lowered.find(std::string_view(name_expression));
  return found != kernel->lowered.end() ? found->second.c_str() : name_expression;
}

void kcache_kernel_free(kcache_kernel* kernel) { delete kernel; }

// ---- Stats ------------------------------------------------------------------

int kcache_get_stats(kcache_cache* cache, int all_processes, kcache_stats* out, char** error) {
  return guarded(error, [&] {
    if (cache == nullptr || out == nullptr || out->size < sizeof(size_t)) {
      return invalid("cache and out (with its size) are required", error);
    }
    kcache_stats full{};
    full.size = sizeof full;
    kcache::CacheStats c = cache->cache->stats();
    if (all_processes != 0) {
      auto folder = kcache::CacheAdmin(*cache->cache).folder_stats();
      if (!folder) return fail(folder.status(), error);
      c = folder->counts;
      full.entries = folder->entries;
      full.bytes = folder->bytes;
      full.since_unix = static_cast<std::uint64_t>(folder->since_unix);
    }
    full.requests = c.requests;
    full.memory_hits = c.memory_hits;
    full.system_hits = c.system_hits;
    full.user_hits = c.user_hits;
    full.compiles = c.compiles;
    full.compile_failures = c.compile_failures;
    full.failure_hits = c.failure_hits;
    full.compile_micros = c.compile_micros;
    full.compile_micros_saved = c.compile_micros_saved;
    full.bytes_served = c.bytes_served;
    full.bytes_stored = c.bytes_stored;
    full.evicted = c.evicted;
    full.expired = c.expired;
    full.corrupt_entries = c.corrupt_entries;
    full.store_failures = c.store_failures;
    full.lock_waits = c.lock_waits;
    full.lock_wait_micros = c.lock_wait_micros;
    full.lock_timeouts = c.lock_timeouts;
    full.breaker_trips = c.breaker_trips;
    full.rejected = c.rejected;
    full.uncacheable = c.uncacheable;
    // A caller built against an older, shorter struct gets what it has room for.
    const std::size_t size = std::min(out->size, sizeof full);
    std::memcpy(reinterpret_cast<char*>(out) + sizeof(size_t),
                reinterpret_cast<const char*>(&full) + sizeof(size_t), size - sizeof(size_t));
    return succeed(error);
  });
}

int kcache_zero_stats(kcache_cache* cache, char** error) {
  return guarded(error, [&] {
    if (cache == nullptr) return invalid("cache is NULL", error);
    if (kcache::Status s = kcache::CacheAdmin(*cache->cache).zero_stats(); !s.is_ok())
      return fail(s, error);
    return succeed(error);
  });
}

}  // extern "C"
