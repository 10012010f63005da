#include "core/key_builder.h"

#include <charconv>
#include <set>

#include "format/entry.h"
#include "format/field_text.h"
#include "format/hash.h"
#include "inputs/include_scanner.h"
#include "inputs/options.h"

namespace kcache {
namespace {

// Whether the dialect's compiler gets in-memory headers as files in a
// folder (so a name must be a plain relative path and names that
// normalise alike are the same file).
bool headers_are_files(Dialect dialect) {
  return dialect == Dialect::kOpenCl || dialect == Dialect::kGcc || dialect == Dialect::kNvcc;
}

bool has_parent_step(const std::string& name) {
  for (std::size_t pos = 0; pos <= name.size();) {
    std::size_t slash = name.find('/', pos);
    if (slash == std::string::npos) slash = name.size();
    if (name.compare(pos, slash - pos, "..") == 0) return true;
    pos = slash + 1;
  }
  return false;
}

Status check_headers(const std::vector<Header>& headers, Dialect dialect) {
  std::set<std::string> names;
  const bool files = headers_are_files(dialect);
  for (const auto& header : headers) {
    if (header.name.empty()) return Status::invalid_argument("an in-memory header has no name");
    if (files && (header.name.starts_with('/') || has_parent_step(header.name))) {
      return Status::invalid_argument("in-memory header name '" + header.name +
                                      "' must be a relative path without '..'");
    }
    // Where names are joined like paths (files; a generic compiler may),
    // "x.h" and "./x.h" are one header.
    const std::string name =
        files || dialect == Dialect::kGeneric ? normal_relative(header.name) : header.name;
    if (!names.insert(name).second) {
      return Status::invalid_argument("two in-memory headers are named '" + header.name +
                                      "'; nothing was compiled");
    }
  }
  return Status::ok();
}

void append_paths(std::vector<PathOption>& to, const std::vector<PathOption>& from) {
  to.insert(to.end(), from.begin(), from.end());
}

void collect_defines(const ParsedOptions& options, std::vector<std::string>& defines) {
  for (const auto& token : options.tokens) {
    if (token.starts_with("-D") && token.size() > 2) defines.push_back(token.substr(2));
  }
}

// Every input of a scan: its shape, each piece length-prefixed (so no
// two differ in only where one piece ends), and its texts by view (what
// a scan memo is found by, without copying the source).
ScanInputs scan_inputs(const SearchInputs& search, const ScanSettings& settings,
                       const KernelRequest& request) {
  ScanInputs inputs;
  std::string& out = inputs.shape;
  out.reserve(256);
  auto put = [&out](std::string_view piece) {
    char digits[24];
    char* end = std::to_chars(digits, digits + sizeof digits, piece.size()).ptr;
    out.append(digits, static_cast<std::size_t>(end - digits));
    out.push_back(':');
    out.append(piece);
  };
  auto put_number = [&put](std::size_t n) {
    char digits[24];
    char* end = std::to_chars(digits, digits + sizeof digits, n).ptr;
    put(std::string_view(digits, static_cast<std::size_t>(end - digits)));
  };
  put(dialect_name(search.dialect));
  for (const auto* list : {&search.paths, &search.trailing_paths}) {
    put_number(list->size());
    for (const auto& path : *list) {
      put_number(static_cast<std::size_t>(path.role));
      put(path.path);
    }
  }
  for (const auto* list :
       {&search.include_dirs, &search.toolkit_dirs, &search.env_system_dirs, &settings.defines}) {
    put_number(list->size());
    for (const auto& item : *list) put(item);
  }
  put(search.no_source_include ? "1" : "0");
  put(settings.unfound_is_compilers ? "1" : "0");
  put(settings.everywhere_is_enough ? "1" : "0");
  put_number(request.headers.size());
  inputs.texts.reserve(request.headers.size() + 1);
  for (const auto& header : request.headers) {
    put(header.name);
    put_number(header.content.size());
    inputs.texts.push_back(header.content);
  }
  put_number(request.source.size());
  inputs.texts.push_back(request.source);
  return inputs;
}

// The scan's fields of the key ("header", "headers.scan"), written once
// per scan: a memoized scan is reused with them.
std::string header_fields(const IncludeScan& scan) {
  std::string text;
  std::string line;
  for (const auto& header : scan.headers) {
    line.assign(header.name).append(" ").append(header.location).append(" ").append(header.digest);
    append_field(text, "header", line);
  }
  if (scan.searched_everywhere) append_field(text, "headers.scan", "everywhere");
  return text;
}

// The key text, written straight into its serialized form: this runs on
// every request.
KeyText key_text(const KernelRequest& request, const CompilerIdentity& compiler,
                 const CompilerInputs& inputs, const Target& target, const ParsedOptions& options,
                 const IncludeScan& scan) {
  std::string text;
  text.reserve(512 + compiler.id.size() + compiler.version.size() + scan.key_fields.size());
  append_field(text, "kcache.key", std::to_string(kKeySchemaVersion));
  append_field(text, "entry.format", std::to_string(kEntryFormatVersion));
  append_field(text, "backend", compiler.backend);
  append_field(text, "compiler.id", compiler.id);
  append_field(text, "compiler.version", compiler.version);
  append_field(text, "target.arch", target.arch);
  append_field(text, "target.features", target.features);
  for (const auto& [name, value] : inputs.environment)
    append_field(text, "env", name + "=" + value);
  for (const auto& option : options.tokens) append_field(text, "option", option);
  for (const auto& dir : request.include_dirs) append_field(text, "include.dir", dir);
  for (const auto& name : request.kernel_names) append_field(text, "kernel", name);
  text.append(scan.key_fields);
  // Last, whole: compared byte for byte on every hit, it is what makes a
  // non-cryptographic key safe. Its line here, the source itself by
  // reference (append_raw_field's form).
  append_raw_field_line(text, kSourceField, request.source.size());
  return KeyText(std::move(text), request.source);
}

}  // namespace

Result<KeyText> build_key_text(const KernelRequest& request, const CompilerIdentity& compiler,
                               const CompilerInputs& inputs, const Target& target, const Env& env,
                               KeyMemo* memo, KeyedFiles* keyed_files) {
  if (request.source.empty()) return Status::invalid_argument("the request has no source");
  if (target.arch.empty()) return Status::invalid_argument("the request has no target arch");
  const Dialect dialect = parse_dialect(inputs.dialect);
  if (Status s = check_headers(request.headers, dialect); !s.is_ok()) return s;
  auto options = parse_options(request.options, dialect, inputs.harmless_options);
  if (!options) return options.status();
  if (!options->unkeyable.empty()) return Status::not_supported(options->unkeyable);
  if (inputs.one_option_string && !join_options(request.include_dirs)) {
    return Status::not_supported(
        "an include folder holds a space, a quote or a backslash, which an OpenCL option string "
        "cannot carry");
  }
  if (inputs.one_option_string && !join_options(options->tokens)) {
    return Status::not_supported(
        "an option holds a space, a quote or a backslash, which OpenCL platforms split each "
        "their own way");
  }
  // The compiler's own options: what they name shapes the search; anything
  // else they do is the compiler's (its identity).
  auto leading = parse_options(inputs.leading_options, dialect, inputs.harmless_options);
  if (!leading) return leading.status();
  auto trailing = parse_options(inputs.trailing_options, dialect, inputs.harmless_options);
  if (!trailing) return trailing.status();
  if (!trailing->unkeyable.empty()) {
    return Status::not_supported("the compiler's environment adds an option kcache cannot key: " +
                                 trailing->unkeyable);
  }

  // Most generated kernels include nothing: no model, no scan (this runs
  // on every request).
  const bool forced = std::any_of(options->paths.begin(), options->paths.end(), [](const auto& p) {
    return p.role == OptionRole::kForcedInclude || p.role == OptionRole::kMacrosFile;
  });
  if (!forced && leading->paths.empty() && trailing->paths.empty() &&
      !may_read_files(request.source)) {
    return key_text(request, compiler, inputs, target, *options, IncludeScan{});
  }

  SearchInputs search;
  search.dialect = dialect;
  append_paths(search.paths, leading->paths);
  append_paths(search.paths, options->paths);
  search.include_dirs = request.include_dirs;
  search.trailing_paths = trailing->paths;
  search.toolkit_dirs = inputs.toolkit_dirs;
  search.env_system_dirs = inputs.system_dirs;
  search.no_source_include = options->no_source_include || leading->no_source_include;
  ScanSettings settings;
  collect_defines(*leading, settings.defines);
  collect_defines(*options, settings.defines);
  collect_defines(*trailing, settings.defines);
  settings.unfound_is_compilers = inputs.owns_unfound_headers;
  settings.everywhere_is_enough = dialect == Dialect::kGcc || dialect == Dialect::kNvcc;
  settings.digests = memo != nullptr ? &memo->digests : nullptr;

  ScanInputs memo_inputs;
  if (memo != nullptr) {
    memo_inputs = scan_inputs(search, settings, request);
    if (auto known = memo->scans.find(memo_inputs, env)) {
      if (keyed_files != nullptr) *keyed_files = {known->files, known->probes};
      return key_text(request, compiler, inputs, target, *options, *known);
    }
  }
  const IncludeModel model(std::move(search), &env);
  auto scan = scan_includes(request.source, request.headers, model, env, settings);
  if (!scan) return scan.status();
  if (!scan->unkeyable.empty()) return Status::not_supported(scan->unkeyable);
  scan->key_fields = header_fields(*scan);
  if (keyed_files != nullptr) *keyed_files = {scan->files, scan->probes};
  KeyText text = key_text(request, compiler, inputs, target, *options, *scan);
  if (memo != nullptr) memo->scans.keep(memo_inputs, std::move(*scan));
  return text;
}

Result<KeyText> build_key_text(const KernelRequest& request, const Compiler& compiler,
                               const Target& target, const Env& env, KeyMemo* memo,
                               KeyedFiles* keyed_files) {
  return build_key_text(request, compiler.identity(), compiler.inputs(), target, env, memo,
                        keyed_files);
}

Result<KeyMaterial> build_key_material(const KernelRequest& request,
                                       const CompilerIdentity& compiler,
                                       const CompilerInputs& inputs, const Target& target,
                                       const Env& env) {
  auto text = build_key_text(request, compiler, inputs, target, env);
  if (!text) return text.status();
  return KeyMaterial::parse(text->joined());
}

Result<KeyMaterial> build_key_material(const KernelRequest& request,
                                       const CompilerIdentity& compiler, const Target& target,
                                       const Env& env) {
  return build_key_material(request, compiler, CompilerInputs{}, target, env);
}

}  // namespace kcache
