#include "core/key_builder.h"

#include "core/include_scanner.h"
#include "core/options_normalizer.h"
#include "format/entry.h"
#include "format/hash.h"

namespace kcache {

Result<KeyMaterial> build_key_material(const KernelRequest& request,
                                       const CompilerIdentity& compiler, const Target& target,
                                       const Env& env,
                                       const std::vector<std::string>& toolkit_dirs) {
  if (request.source.empty()) return Status::invalid_argument("the request has no source");
  if (target.arch.empty()) return Status::invalid_argument("the request has no target arch");
  auto tokens = split_options(request.options);
  if (!tokens) return tokens.status();
  std::vector<std::string> options = normalize_options(std::move(*tokens));

  std::vector<std::string> dirs = request.include_dirs;
  for (auto& dir : include_dirs_in(options)) dirs.push_back(std::move(dir));
  auto scan = scan_includes(request.source, request.headers, dirs, toolkit_dirs, env);
  if (!scan) return scan.status();

  std::vector<KeyField> fields;
  auto add = [&fields](std::string name, std::string value) {
    fields.push_back({std::move(name), std::move(value)});
  };
  add("kcache.key", std::to_string(kKeySchemaVersion));
  add("entry.format", std::to_string(kEntryFormatVersion));
  add("backend", compiler.backend);
  add("compiler.id", compiler.id);
  add("compiler.version", compiler.version);
  add("target.arch", target.arch);
  add("target.features", target.features);
  for (const auto& option : options) add("option", option);
  for (const auto& dir : request.include_dirs) add("include.dir", dir);
  for (const auto& name : request.kernel_names) add("kernel", name);
  add("source", sha256_field(request.source));
  for (const auto& header : scan->headers) add("header", header.name + " " + header.digest);
  if (scan->hashed_whole_dirs) add("headers.scan", "whole-dirs");
  return KeyMaterial(std::move(fields));
}

}  // namespace kcache
