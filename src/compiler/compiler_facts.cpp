#include "compiler/compiler_facts.h"

#include <algorithm>
#include <filesystem>

#include "base/hash.h"
#include "compiler/build_parts.h"

namespace kcache {
namespace {

constexpr std::string_view kFormat = "kcache.compiler-facts 1";

std::string checksum_line(std::string_view text) {
  return "checksum " + to_hex(xxh3_128(text)) + "\n";
}

}  // namespace

std::string stamp_text(const std::string& path, const Env& env) {
  auto stamp = env.stamp(path);
  if (!stamp) return {};
  return std::to_string(stamp->size) + " " + std::to_string(stamp->modified_ns) + " " +
         std::to_string(stamp->changed_ns) + " " + std::to_string(stamp->id.device) + ":" +
         std::to_string(stamp->id.inode);
}

std::string build_fingerprint(const std::vector<std::string>& files, const Env& env) {
  std::string text;
  std::vector<std::string> seen;
  for (const auto& file : files) {
    std::error_code error;
    const auto canonical = std::filesystem::canonical(file, error);
    const std::string path = error ? file : canonical.string();
    // Once each; a folder inside one already counted (the toolkit's
    // include/cccl inside include) is in that one's listing.
    if (std::any_of(seen.begin(), seen.end(), [&](const std::string& earlier) {
          return path == earlier || path.starts_with(earlier + "/");
        })) {
      continue;
    }
    seen.push_back(path);
    text += build_part(path, env) + "\n";
  }
  return sha256_field(text);
}

std::optional<std::string> fact(const CompilerFacts& facts, std::string_view name) {
  for (const auto& [field, value] : facts.facts) {
    if (field == name) return value;
  }
  return std::nullopt;
}

std::optional<CompilerFacts> load_compiler_facts(const std::string& dir, const std::string& name,
                                                 const Env& env) {
  if (dir.empty()) return std::nullopt;
  auto bytes = env.read_file(dir + "/" + name + ".facts");
  if (!bytes) return std::nullopt;
  const auto span = bytes->span();
  const std::string_view text(reinterpret_cast<const char*>(span.data()), span.size());
  if (!text.starts_with(kFormat) || !text.ends_with('\n')) return std::nullopt;
  const std::size_t last = text.rfind('\n', text.size() - 2);
  if (last == std::string_view::npos) return std::nullopt;
  const std::string_view body = text.substr(0, last + 1);
  if (text.substr(last + 1) != checksum_line(body)) return std::nullopt;
  auto fields = decode_fields(body.substr(kFormat.size() + 1));
  if (!fields) return std::nullopt;
  CompilerFacts facts;
  for (auto& [field, value] : *fields) {
    if (field == "file") {
      // "<stamp> | <path>": the stamp the file had when the facts were learned.
      const std::size_t bar = value.find(" | ");
      if (bar == std::string::npos) return std::nullopt;
      const std::string path = value.substr(bar + 3);
      const std::string now = stamp_text(path, env);
      if (now.empty() || now != value.substr(0, bar)) return std::nullopt;
      facts.files.push_back(path);
    } else {
      facts.facts.emplace_back(std::move(field), std::move(value));
    }
  }
  return facts;
}

void store_compiler_facts(const std::string& dir, const std::string& name,
                          const CompilerFacts& facts, Env& env) {
  if (dir.empty()) return;
  Fields fields;
  for (const auto& path : facts.files) {
    const std::string stamp = stamp_text(path, env);
    if (stamp.empty()) return;
    fields.emplace_back("file", stamp + " | " + path);
  }
  fields.insert(fields.end(), facts.facts.begin(), facts.facts.end());
  std::string text = std::string(kFormat) + "\n" + encode_fields(fields);
  text += checksum_line(text);
  if (!env.create_dirs(dir, 0700).is_ok()) return;
  (void)env.write_file_atomic(dir + "/" + name + ".facts",
                              {reinterpret_cast<const std::uint8_t*>(text.data()), text.size()},
                              /*sync=*/false);
}

}  // namespace kcache
