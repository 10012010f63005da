#include "key/key_builder.h"

#include <cstring>
#include <set>

#include "base/field_text.h"
#include "base/hash.h"
#include "format/entry.h"
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

// Whether a -D of `options` tests for a header (`-DHAS_X=__has_include(<x>)`,
// or defines a macro that does): the source may use it with no #include.
bool defines_test_headers(const ParsedOptions& options) {
  return std::any_of(options.tokens.begin(), options.tokens.end(), [](const std::string& token) {
    return token.starts_with("-D") && token.find("__has_") != std::string::npos;
  });
}

// Writes a memo's shape: each piece prefixed by its length (8 raw bytes:
// a shape is only hashed and compared, never read back), so no two shapes
// differ in only where one piece ends.
class Shape {
 public:
  explicit Shape(std::string& out) : out_(out) {}
  void put(std::string_view piece) {
    put_number(piece.size());
    out_.append(piece);
  }
  void put_number(std::size_t n) {
    char bytes[sizeof n];
    std::memcpy(bytes, &n, sizeof n);
    out_.append(bytes, sizeof bytes);
  }
  void put_list(const std::vector<std::string>& list) {
    put_number(list.size());
    for (const auto& item : list) put(item);
  }
  // The in-memory headers' names and sizes; their contents and the
  // source go to `texts`, by view.
  void put_texts(const KernelRequest& request, std::vector<std::string_view>& texts) {
    put_number(request.headers.size());
    texts.reserve(request.headers.size() + 1);
    for (const auto& header : request.headers) {
      put(header.name);
      put_number(header.content.size());
      texts.push_back(header.content);
    }
    put_number(request.source.size());
    texts.push_back(request.source);
  }

 private:
  std::string& out_;
};

// Every input of a scan: the search, the macros, the in-memory headers
// and the source (what a scan memo is found by, without copying a text).
ScanInputs scan_inputs(const SearchInputs& search, const ScanSettings& settings,
                       const KernelRequest& request) {
  ScanInputs inputs;
  inputs.shape.reserve(256);
  Shape shape(inputs.shape);
  shape.put(dialect_name(search.dialect));
  for (const auto* list : {&search.paths, &search.trailing_paths}) {
    shape.put_number(list->size());
    for (const auto& path : *list) {
      shape.put_number(static_cast<std::size_t>(path.role));
      shape.put(path.path);
    }
  }
  for (const auto* list :
       {&search.include_dirs, &search.toolkit_dirs, &search.env_system_dirs, &settings.defines}) {
    shape.put_list(*list);
  }
  shape.put(search.no_source_include ? "1" : "0");
  shape.put(search.source_folder);
  shape.put(settings.unfound_is_compilers ? "1" : "0");
  shape.put(settings.everywhere_is_enough ? "1" : "0");
  shape.put_texts(request, inputs.texts);
  return inputs;
}

// Every input of a whole key text (a memo of heads is found by it): the
// compiler, how it reads files, the target and the request.
ScanInputs request_inputs(const KernelRequest& request, const CompilerIdentity& compiler,
                          const CompilerInputs& inputs, const Target& target) {
  ScanInputs all;
  all.shape.reserve(512 + compiler.version.size() + request.options.size());
  Shape shape(all.shape);
  shape.put(compiler.backend);
  shape.put(compiler.id);
  shape.put(compiler.version);
  shape.put(target.arch);
  shape.put(target.features);
  shape.put(inputs.dialect);
  shape.put_list(inputs.leading_options);
  shape.put_list(inputs.trailing_options);
  shape.put_list(inputs.toolkit_dirs);
  shape.put_list(inputs.system_dirs);
  shape.put_number(inputs.environment.size());
  for (const auto& [name, value] : inputs.environment) {
    shape.put(name);
    shape.put(value);
  }
  shape.put_list(inputs.harmless_options);
  shape.put(inputs.owns_unfound_headers ? "1" : "0");
  shape.put(inputs.one_option_string ? "1" : "0");
  shape.put(request.options);
  shape.put_list(request.include_dirs);
  shape.put_list(request.kernel_names);
  shape.put(request.source_name ? "1" + *request.source_name : "0");
  shape.put_texts(request, all.texts);
  return all;
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

// The key text's fields up to the request's own (kernels, source name,
// headers, source): the same for every request of one option set.
std::string key_prefix(const CompilerIdentity& compiler, const CompilerInputs& inputs,
                       const Target& target, const ParsedOptions& options,
                       const std::vector<std::string>& include_dirs) {
  std::string text;
  text.reserve(512 + compiler.id.size() + compiler.version.size());
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
  for (const auto& dir : include_dirs) append_field(text, "include.dir", dir);
  return text;
}

// The request's own fields after the prefix, up to the source.
void append_request_fields(std::string& text, const KernelRequest& request,
                           std::string_view scan_fields) {
  for (const auto& name : request.kernel_names) append_field(text, "kernel", name);
  if (request.source_name) append_field(text, "source.name", *request.source_name);
  text.append(scan_fields);
  // Last, whole: compared byte for byte on every hit, it is what makes a
  // non-cryptographic key safe. Its line here, the source itself by
  // reference (append_raw_field's form).
  append_raw_field_line(text, kSourceField, request.source.size());
}

// The key text up to the source, written straight into its serialized
// form: this runs on every request not found in a memo.
std::string key_head(const KernelRequest& request, const CompilerIdentity& compiler,
                     const CompilerInputs& inputs, const Target& target,
                     const ParsedOptions& options, const IncludeScan& scan) {
  std::string text = key_prefix(compiler, inputs, target, options, request.include_dirs);
  append_request_fields(text, request, scan.key_fields);
  return text;
}

// The key text from a scan, its head kept in `memo` by the whole request.
KeyText memoized_text(const KernelRequest& request, const CompilerIdentity& compiler,
                      const CompilerInputs& inputs, const Target& target,
                      const ParsedOptions& options, std::shared_ptr<const IncludeScan> scan,
                      KeyMemo* memo, const ScanInputs* whole) {
  KeyText text(key_head(request, compiler, inputs, target, options, *scan), request.source);
  if (memo == nullptr || whole == nullptr) return text;
  const CacheKey key = text.key();  // the cache asks for it next: computed once
  if (memo->records) memo->records->keep(*whole, *scan, *text.head());
  memo->heads.keep(*whole, std::move(scan),
                   std::make_shared<const ScanNote>(ScanNote{text.head(), key}));
  return KeyText(text.head(), request.source, key);
}

}  // namespace

Result<KeyText> build_key_text(const KernelRequest& request, const CompilerIdentity& compiler,
                               const CompilerInputs& inputs, const Target& target, const Env& env,
                               KeyMemo* memo, KeyedFiles* keyed_files) {
  // An empty source is a translation unit like any other (CuPy compiles
  // one per option set to see what the compiler makes of nothing): the
  // compiler, not the key, says whether it is valid.
  if (target.arch.empty()) return Status::invalid_argument("the request has no target arch");
  // A request keyed before, while all its scan looked at holds: the head
  // it had, found by everything it was derived from (parsing the options,
  // the search and the fields again would cost more than the lookup).
  ScanInputs whole;
  const bool source_reads = may_read_files(request.source);  // looked at once
  // A request that reads no file, with inputs keyed before: the prefix
  // they gave (key/key_prefixes.h), then the request's own fields.
  if (memo != nullptr && !source_reads) {
    std::string text;
    text.reserve(1024);
    if (memo->prefixes.append(compiler, inputs, target, request.options, request.include_dirs,
                              text)) {
      if (Status s = check_headers(request.headers, parse_dialect(inputs.dialect)); !s.is_ok()) {
        return s;
      }
      append_request_fields(text, request, {});
      return KeyText(std::move(text), request.source);
    }
  }
  const bool memoize = memo != nullptr && source_reads;
  if (memoize) {
    whole = request_inputs(request, compiler, inputs, target);
    ScanFound found = memo->heads.find(whole, env);
    if (found.scan && found.note) {
      if (keyed_files != nullptr) *keyed_files = {found.scan->files, found.scan->probes};
      return KeyText(found.note->text, request.source, found.note->key);
    }
    // A later process's request: the head an earlier one kept on disk.
    if (memo->records) {
      if (auto record = memo->records->find(whole)) {
        const CacheKey key = KeyText(record->head, request.source).key();
        if (keyed_files != nullptr) *keyed_files = {record->scan->files, record->scan->probes};
        memo->heads.keep(whole, record->scan,
                         std::make_shared<const ScanNote>(ScanNote{record->head, key}));
        return KeyText(record->head, request.source, key);
      }
    }
  }
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
  if (!forced && leading->paths.empty() && trailing->paths.empty() && !source_reads &&
      !defines_test_headers(*options) && !defines_test_headers(*leading) &&
      !defines_test_headers(*trailing)) {
    std::string text = key_prefix(compiler, inputs, target, *options, request.include_dirs);
    if (memo != nullptr) {
      memo->prefixes.keep(compiler, inputs, target, request.options, request.include_dirs, text);
    }
    append_request_fields(text, request, {});
    return KeyText(std::move(text), request.source);
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
  if (request.source_name) search.source_folder = source_folder_of(*request.source_name);
  ScanSettings settings;
  collect_defines(*leading, settings.defines);
  collect_defines(*options, settings.defines);
  collect_defines(*trailing, settings.defines);
  settings.unfound_is_compilers = inputs.owns_unfound_headers;
  settings.everywhere_is_enough = dialect == Dialect::kGcc || dialect == Dialect::kNvcc;
  settings.digests = memo != nullptr ? &memo->digests : nullptr;

  const ScanInputs* whole_inputs = memoize ? &whole : nullptr;
  ScanInputs memo_inputs;
  if (memo != nullptr) {
    memo_inputs = scan_inputs(search, settings, request);
    if (ScanFound known = memo->scans.find(memo_inputs, env); known.scan) {
      if (keyed_files != nullptr) *keyed_files = {known.scan->files, known.scan->probes};
      return memoized_text(request, compiler, inputs, target, *options, std::move(known.scan), memo,
                           whole_inputs);
    }
  }
  const IncludeModel model(std::move(search), &env);
  auto scan = scan_includes(request.source, request.headers, model, env, settings);
  if (!scan) return scan.status();
  if (!scan->unkeyable.empty()) return Status::not_supported(scan->unkeyable);
  scan->key_fields = header_fields(*scan);
  if (keyed_files != nullptr) *keyed_files = {scan->files, scan->probes};
  auto kept = std::make_shared<const IncludeScan>(std::move(*scan));
  if (memo != nullptr) memo->scans.keep(memo_inputs, kept);
  return memoized_text(request, compiler, inputs, target, *options, std::move(kept), memo,
                       whole_inputs);
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
