#include "pack/recorded_lines.h"

#include <nlohmann/json.hpp>

#include <algorithm>
#include <cstdio>
#include <filesystem>
#include <functional>
#include <optional>
#include <tuple>
#include <unordered_map>
#include <vector>

namespace kcache::tool {
namespace {

using json = nlohmann::json;

// A manifest text: a string, or {"hex": bytes in hex}.
std::optional<std::string> text_of(const json& value) {
  if (value.is_string()) return value.get<std::string>();
  if (!value.is_object() || !value.contains("hex") || !value["hex"].is_string()) return {};
  const std::string hex = value["hex"];
  if (hex.size() % 2 != 0) return {};
  std::string bytes;
  for (std::size_t i = 0; i < hex.size(); i += 2) {
    unsigned byte = 0;
    if (std::sscanf(hex.c_str() + i, "%2x", &byte) != 1) return {};
    bytes.push_back(static_cast<char>(byte));
  }
  return bytes;
}

std::optional<std::vector<std::string>> texts_of(const json& value) {
  if (!value.is_array()) return {};
  std::vector<std::string> out;
  for (const auto& item : value) {
    auto text = text_of(item);
    if (!text) return {};
    out.push_back(std::move(*text));
  }
  return out;
}

// What same_kernel compares, field by field.
auto kernel_fields(const Line& line) {
  const KernelRequest& r = line.request;
  return std::tie(line.backend, line.recorded.id, line.recorded.version, r.source, r.source_name,
                  r.options, r.kernel_names, r.include_dirs);
}

}  // namespace

bool same_kernel(const Line& a, const Line& b) {
  if (kernel_fields(a) != kernel_fields(b)) return false;
  const auto& x = a.request.headers;
  const auto& y = b.request.headers;
  return std::equal(x.begin(), x.end(), y.begin(), y.end(), [](const Header& h, const Header& k) {
    return h.name == k.name && h.content == k.content;
  });
}

std::size_t kernel_hash(const Line& line) {
  std::size_t hash = std::hash<std::string>()(line.request.source);
  auto mix = [&hash](std::string_view text) {
    hash = hash * 1099511628211u ^ std::hash<std::string_view>()(text);
  };
  mix(line.backend);
  mix(line.request.options);
  for (const auto& name : line.request.kernel_names) mix(name);
  for (const auto& header : line.request.headers) mix(header.content);
  return hash;
}

RecordedLines read_lines(std::string_view manifest, const std::string& backend,
                         const Target& target) {
  RecordedLines out;
  std::unordered_multimap<std::size_t, std::size_t> lines_by_hash;  // kernel_hash -> index
  std::size_t number = 0;
  for (std::string_view rest = manifest; !rest.empty();) {
    const std::size_t end = std::min(rest.find('\n'), rest.size());
    const std::string text(rest.substr(0, end));
    rest.remove_prefix(std::min(end + 1, rest.size()));
    ++number;
    if (text.find_first_not_of(" \t\r") == std::string::npos) continue;  // blank
    auto line = parse_line(text, number);
    if (!line) {
      out.problems.push_back(line.status().message());
      continue;
    }
    if (!backend.empty() && line->backend != backend) {
      ++out.other_backends;
      continue;
    }
    if (auto misfit = target_misfit(line->backend, target)) {
      auto& [count, why] = out.misfits[line->backend];
      if (count++ == 0) {
        why = line->backend + " cannot compile for " + target.to_string() + ": " + *misfit;
      }
      continue;
    }
    const std::size_t hash = kernel_hash(*line);
    const auto alike = lines_by_hash.equal_range(hash);
    if (std::any_of(alike.first, alike.second,
                    [&](const auto& it) { return same_kernel(out.lines[it.second], *line); })) {
      ++out.repeats;
      continue;
    }
    lines_by_hash.emplace(hash, out.lines.size());
    line->request.target = target;
    out.lines.push_back(std::move(*line));
  }
  return out;
}

CompilerConfig config_for(const Line& line, const CompilerConfig& given) {
  CompilerConfig config = given;
  config.backend = line.backend;
  std::string* library = line.backend == "nvrtc" ? &config.nvrtc_library
                         : line.backend == "hip" ? &config.hip_library
                                                 : nullptr;
  std::error_code error;
  if (library != nullptr && library->empty() && !line.recorded_library.empty() &&
      std::filesystem::is_regular_file(line.recorded_library, error)) {
    *library = line.recorded_library;
  }
  if (line.backend != "command") return config;
  const std::string& id = line.recorded.id;
  const std::size_t first = id.find(" | ");
  const std::size_t last = id.rfind(" | ");
  if (first != std::string::npos && last > first) {
    if (config.command.empty()) config.command = id.substr(first + 3, last - first - 3);
    if (config.command_input_name.empty()) config.command_input_name = id.substr(last + 3);
  }
  if (config.compiler_id.empty() && line.recorded.version.starts_with("id:")) {
    config.compiler_id = line.recorded.version.substr(3);
  }
  return config;
}

std::string config_name(const CompilerConfig& config) {
  return config.backend + "\n" + config.command + "\n" + config.command_input_name + "\n" +
         config.compiler_id;
}

Result<Line> parse_line(const std::string& text, std::size_t number) {
  json parsed = json::parse(text, nullptr, /*allow_exceptions=*/false);
  auto bad = [number](const std::string& why) {
    return Status::invalid_argument("line " + std::to_string(number) + ": " + why);
  };
  if (parsed.is_discarded()) return bad("not valid JSON");
  if (!parsed.is_object()) return bad("not a JSON object");
  if (!parsed.contains("kcache_manifest")) return bad("no kcache_manifest version");
  if (!parsed["kcache_manifest"].is_number_integer()) {
    return bad("kcache_manifest " + parsed["kcache_manifest"].dump(-1, ' ', true).substr(0, 40) +
               " is not a version (a whole number)");
  }
  // A later version adds fields, never changes one (docs/formats.md): its
  // lines are read for the fields this kcache knows.
  if (parsed["kcache_manifest"].get<std::int64_t>() < 1) {
    return bad("manifest version " + parsed["kcache_manifest"].dump() + " (versions start at 1)");
  }
  Line line;
  line.number = number;
  auto backend = parsed.contains("backend") ? text_of(parsed["backend"]) : std::nullopt;
  auto source = parsed.contains("source") ? text_of(parsed["source"]) : std::nullopt;
  if (!backend || !source) return bad("no backend or no source");
  line.backend = *backend;
  line.request.source = std::move(*source);
  // formats.md §4: a line without its key is skipped (what a writer
  // killed mid-line leaves may still parse).
  const bool keyed = parsed.contains("key") && parsed["key"].is_string() &&
                     CacheKey::from_hex(parsed["key"].get<std::string>()).has_value();
  if (!keyed) return bad("no key (32 hex digits)");
  line.recorded_key = parsed["key"];
  if (parsed.contains("target") && parsed["target"].is_object()) {
    const json& target = parsed["target"];
    Target recorded;
    if (target.contains("arch")) recorded.arch = text_of(target["arch"]).value_or("");
    if (target.contains("features")) recorded.features = text_of(target["features"]).value_or("");
    if (target.contains("units") && target["units"].is_number_integer()) {
      recorded.units = target["units"].get<int>();
    }
    line.recorded_target = recorded.to_string() + "_" + std::to_string(recorded.units);
  }
  if (parsed.contains("compiler") && parsed["compiler"].is_object()) {
    const json& compiler = parsed["compiler"];
    if (compiler.contains("id")) line.recorded.id = text_of(compiler["id"]).value_or("");
    if (compiler.contains("version")) {
      line.recorded.version = text_of(compiler["version"]).value_or("");
    }
    if (compiler.contains("library")) {
      line.recorded_library = text_of(compiler["library"]).value_or("");
    }
  }
  if (parsed.contains("cwd")) {
    auto cwd = text_of(parsed["cwd"]);
    if (!cwd) return bad("cwd is not a text");
    line.cwd = std::move(*cwd);
  }
  if (parsed.contains("source_name")) {
    auto name = text_of(parsed["source_name"]);
    if (!name) return bad("source_name is not a text");
    line.request.source_name = std::move(*name);
  }
  if (parsed.contains("options")) {
    auto options = text_of(parsed["options"]);
    if (!options) return bad("options is not a text");
    line.request.options = std::move(*options);
  }
  for (const char* list : {"kernel_names", "include_dirs"}) {
    if (!parsed.contains(list)) continue;
    auto texts = texts_of(parsed[list]);
    if (!texts) return bad(std::string(list) + " is not a list of texts");
    (std::string(list) == "kernel_names" ? line.request.kernel_names : line.request.include_dirs) =
        std::move(*texts);
  }
  if (parsed.contains("headers")) {
    if (!parsed["headers"].is_array()) return bad("headers is not a list");
    for (const auto& header : parsed["headers"]) {
      auto name =
          header.is_object() && header.contains("name") ? text_of(header["name"]) : std::nullopt;
      auto content = header.is_object() && header.contains("content") ? text_of(header["content"])
                                                                      : std::nullopt;
      if (!name || !content) return bad("a header without a name or a content");
      line.request.headers.push_back({std::move(*name), std::move(*content)});
    }
  }
  return line;
}

}  // namespace kcache::tool
