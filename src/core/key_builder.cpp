#include "core/key_builder.h"

#include <string.h>  // memmem

#include "core/include_scanner.h"
#include "core/options_normalizer.h"
#include "format/entry.h"
#include "format/field_text.h"
#include "format/hash.h"

namespace kcache {
namespace {

// Whether `source` can include a header at all: without the word "include"
// it cannot, and no header scan (or toolkit folder list) is needed.
bool may_include(std::string_view source) {
  // memmem, not string_view::find: that restarts a memchr at every 'i'.
  constexpr std::string_view kWord = "include";
  return ::memmem(source.data(), source.size(), kWord.data(), kWord.size()) != nullptr;
}

// `toolkit_dirs()`: the compiler's own header folders, asked for only when
// the source can include something.
template <typename ToolkitDirs>
Result<KeyText> key_text(const KernelRequest& request, const CompilerIdentity& compiler,
                         const Target& target, const Env& env, const ToolkitDirs& toolkit_dirs) {
  if (request.source.empty()) return Status::invalid_argument("the request has no source");
  if (target.arch.empty()) return Status::invalid_argument("the request has no target arch");
  auto tokens = split_options(request.options);
  if (!tokens) return tokens.status();
  std::vector<std::string> options = normalize_options(std::move(*tokens));

  // Most generated kernels include nothing: no scan (this runs on every
  // request).
  IncludeScan scan;
  if (may_include(request.source)) {
    std::vector<std::string> dirs = request.include_dirs;
    for (auto& dir : include_dirs_in(options)) dirs.push_back(std::move(dir));
    auto scanned = scan_includes(request.source, request.headers, dirs, toolkit_dirs(), env);
    if (!scanned) return scanned.status();
    scan = std::move(*scanned);
  }

  // Written straight into its serialized form: this runs on every request.
  std::string text;
  text.reserve(512 + compiler.id.size() + compiler.version.size());
  append_field(text, "kcache.key", std::to_string(kKeySchemaVersion));
  append_field(text, "entry.format", std::to_string(kEntryFormatVersion));
  append_field(text, "backend", compiler.backend);
  append_field(text, "compiler.id", compiler.id);
  append_field(text, "compiler.version", compiler.version);
  append_field(text, "target.arch", target.arch);
  append_field(text, "target.features", target.features);
  for (const auto& option : options) append_field(text, "option", option);
  for (const auto& dir : request.include_dirs) append_field(text, "include.dir", dir);
  for (const auto& name : request.kernel_names) append_field(text, "kernel", name);
  for (const auto& header : scan.headers) {
    append_field(text, "header", header.name + " " + header.digest);
  }
  if (scan.hashed_whole_dirs) append_field(text, "headers.scan", "whole-dirs");
  // Last, whole: compared byte for byte on every hit, it is what makes a
  // non-cryptographic key safe. Its line here, the source itself by
  // reference (append_raw_field's form).
  append_raw_field_line(text, kSourceField, request.source.size());
  return KeyText(std::move(text), request.source);
}

}  // namespace

Result<KeyText> build_key_text(const KernelRequest& request, const CompilerIdentity& compiler,
                               const Target& target, const Env& env,
                               const std::vector<std::string>& toolkit_dirs) {
  return key_text(request, compiler, target, env,
                  [&]() -> const std::vector<std::string>& { return toolkit_dirs; });
}

Result<KeyText> build_key_text(const KernelRequest& request, const Compiler& compiler,
                               const Target& target, const Env& env) {
  return key_text(request, compiler.identity(), target, env,
                  [&] { return compiler.toolkit_include_dirs(); });
}

Result<KeyMaterial> build_key_material(const KernelRequest& request,
                                       const CompilerIdentity& compiler, const Target& target,
                                       const Env& env,
                                       const std::vector<std::string>& toolkit_dirs) {
  auto text = build_key_text(request, compiler, target, env, toolkit_dirs);
  if (!text) return text.status();
  return KeyMaterial::parse(text->joined());
}

}  // namespace kcache
