#include "key/files_read.h"

#include <algorithm>
#include <charconv>
#include <optional>

namespace kcache {

Result<Fields> files_read_fields(const std::vector<std::string>& files,
                                 std::int64_t compile_start_ns,
                                 const std::vector<FileId>& rechecked, const Env& env,
                                 FileDigests& digests) {
  Fields fields;
  fields.reserve(files.size());
  for (const auto& path : files) {
    auto stamp = env.stamp(path);
    if (!stamp || stamp->type != FileType::kRegular) {
      return Status::not_supported("the compiler read " + path + ", which kcache cannot read");
    }
    const bool keyed = std::find(rechecked.begin(), rechecked.end(), stamp->id) != rechecked.end();
    if (!keyed && changed_recently(*stamp, compile_start_ns)) {
      return Status::not_supported("the compiler read " + path +
                                   ", which changed while it compiled (or just before)");
    }
    auto content = digests.get(path, *stamp, env);
    if (!content) {
      return Status::not_supported("the compiler read " + path +
                                   ", which kcache cannot read: " + content.status().message());
    }
    fields.emplace_back(
        std::string(kReadField),
        content->digest + " " + std::to_string(stamp->size) + " " +
            std::to_string(stamp->modified_ns) + " " + std::to_string(stamp->changed_ns) + " " +
            std::to_string(stamp->id.device) + ":" + std::to_string(stamp->id.inode) + " " + path);
  }
  return fields;
}

namespace {

// A "read" field's parts: "<digest> <size> <mtime> <ctime> <dev>:<ino> <path>".
struct ReadField {
  std::string_view digest;
  FileStamp stamp;
  std::string path;
};

std::optional<ReadField> parse_read_field(std::string_view value) {
  ReadField field;
  std::string_view words[5];
  for (auto& word : words) {
    const std::size_t space = value.find(' ');
    if (space == std::string_view::npos) return std::nullopt;
    word = value.substr(0, space);
    value.remove_prefix(space + 1);
  }
  auto number = [](std::string_view text, auto& out) {
    return std::from_chars(text.data(), text.data() + text.size(), out).ec == std::errc();
  };
  const std::size_t colon = words[4].find(':');
  if (colon == std::string_view::npos || !number(words[1], field.stamp.size) ||
      !number(words[2], field.stamp.modified_ns) || !number(words[3], field.stamp.changed_ns) ||
      !number(words[4].substr(0, colon), field.stamp.id.device) ||
      !number(words[4].substr(colon + 1), field.stamp.id.inode) || value.empty()) {
    return std::nullopt;
  }
  field.stamp.type = FileType::kRegular;
  field.digest = words[0];
  field.path = std::string(value);
  return field;
}

}  // namespace

bool files_read_unchanged(const Fields& metadata, const Env& env, FileDigests& digests) {
  for (const auto& [name, value] : metadata) {
    if (name != kReadField) continue;
    auto field = parse_read_field(value);
    if (!field) return false;
    auto stamp = env.stamp(field->path);
    if (!stamp || stamp->type != FileType::kRegular) return false;
    if (*stamp == field->stamp) continue;  // unchanged since the compile
    auto content = digests.get(field->path, *stamp, env);
    if (!content || content->digest != field->digest) return false;
  }
  return true;
}

}  // namespace kcache
