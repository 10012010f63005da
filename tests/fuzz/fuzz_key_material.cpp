// Key material: the field text (decode_fields, KeyMaterial::parse) and the
// include scanner that decides which headers go into a key.
//
// The whole input is read as field text. It is also cut at NUL bytes: the
// first piece is a kernel source, each further piece an in-memory header
// ("name", a newline, then its content), and the pieces, read as
// "name\nvalue", are encoded as fields.
//
// Invariants: field text that decodes re-encodes to the same bytes (the
// form is canonical) and parses as the same KeyMaterial, whose digest is
// the XXH3-128 of that text; valid fields survive encode/decode. The scanner
// never touches the disk when there are no include directories, never
// fails then, reports only in-memory headers with their own digest, sorted
// and without duplicates, finds every `#include "name"` line that names
// one, finds `#include MACRO` of an undefined macro unkeyable, and does
// not depend on the headers' order.
#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <set>
#include <sstream>

#include "base/field_text.h"
#include "base/hash.h"
#include "fuzz_support.h"
#include "inputs/include_scanner.h"

namespace kcache::fuzz {
namespace {

// An Env whose file system must not be used: aborts on any access.
class NoDiskEnv final : public EnvWrapper {
 public:
  NoDiskEnv() : EnvWrapper(Env::posix()) {}
  Result<ByteBuffer> read_file(const std::string& path) const override { touched(path); }
  Result<std::unique_ptr<File>> open_random_access(const std::string& path) const override {
    touched(path);
  }
  Result<std::vector<DirEntry>> list_dir(const std::string& path) const override { touched(path); }
  bool is_dir(const std::string& path) const override { touched(path); }
  bool exists(const std::string& path) const override { touched(path); }
  // Looking finds nothing (an absolute include name is looked for on disk).
  Result<FileStamp> stamp(const std::string& path) const override {
    return Status::not_found(path);
  }

 private:
  [[noreturn]] static void touched(const std::string& path) {
    KCACHE_FUZZ_CHECK(false, "the scanner touched the disk: " + path);
    std::abort();
  }
};

// Whether `text` has a line that starts the raw source field of key
// material ("source <N>"), after which KeyMaterial::parse reads raw bytes.
bool has_source_line(std::string_view text) {
  for (std::size_t pos = 0; pos < text.size();) {
    if (text.substr(pos).starts_with("source ")) return true;
    const std::size_t end = text.find('\n', pos);
    if (end == std::string_view::npos) return false;
    pos = end + 1;
  }
  return false;
}

void check_field_text(std::string_view text) {
  auto material = KeyMaterial::parse(text);
  if (material) {
    KCACHE_FUZZ_CHECK(material->serialize() == text, "key material re-serializes differently");
    KCACHE_FUZZ_CHECK(material->digest() == CacheKey(xxh3_128(text)),
                      "digest is not the XXH3-128 of the text");
  }
  if (has_source_line(text)) {
    // The source is raw: parse and decode_fields may disagree from there on.
    if (material) {
      KCACHE_FUZZ_CHECK(!material->fields().empty() && material->fields().back().name == "source",
                        "a source line did not become the last field");
    }
    return;
  }
  auto fields = decode_fields(text);
  if (!fields) {
    KCACHE_FUZZ_CHECK(fields.status().code() == StatusCode::kCorruption,
                      fields.status().to_string());
    KCACHE_FUZZ_CHECK(!material.is_ok(), "KeyMaterial::parse accepts what decode_fields refuses");
    return;
  }
  KCACHE_FUZZ_CHECK(encode_fields(*fields) == text, "decoded fields re-encode differently");
  for (const auto& [name, value] : *fields) {
    KCACHE_FUZZ_CHECK(is_valid_field_name(name), "decoded an invalid field name");
  }
  KCACHE_FUZZ_CHECK(material.is_ok(), "KeyMaterial::parse refuses what decode_fields accepts");
  KCACHE_FUZZ_CHECK(material->fields().size() == fields->size(), "key material lost fields");
  for (std::size_t i = 0; i < fields->size(); ++i) {
    KCACHE_FUZZ_CHECK(material->fields()[i].name == (*fields)[i].first &&
                          material->fields()[i].value == (*fields)[i].second,
                      "key material field " + std::to_string(i) + " differs");
  }
}

void check_field_encoding(const std::vector<std::string>& pieces) {
  Fields fields;
  for (const std::string& piece : pieces) {
    const std::size_t newline = piece.find('\n');
    std::string name = piece.substr(0, newline);
    if (!is_valid_field_name(name)) continue;
    fields.emplace_back(std::move(name),
                        newline == std::string::npos ? "" : piece.substr(newline + 1));
  }
  const std::string text = encode_fields(fields);
  auto decoded = decode_fields(text);
  KCACHE_FUZZ_CHECK(decoded.is_ok() && *decoded == fields,
                    "valid fields do not decode back: " + decoded.status().to_string());
  // Key material writes its "source" field raw, and only as the last one:
  // the other fields are field text; any bytes can follow as the source.
  std::vector<KeyField> key_fields;
  std::string escaped;
  for (const auto& [name, value] : fields) {
    if (name == "source") continue;
    key_fields.push_back({name, value});
    append_field(escaped, name, value);
  }
  const KeyMaterial material(key_fields);
  KCACHE_FUZZ_CHECK(material.serialize() == escaped, "KeyMaterial and encode_fields disagree");
  auto parsed = KeyMaterial::parse(escaped);
  KCACHE_FUZZ_CHECK(parsed.is_ok() && *parsed == material, "key material does not parse back");
  key_fields.push_back({"source", pieces.empty() ? std::string() : pieces.back()});
  const KeyMaterial with_source(key_fields);
  auto reparsed = KeyMaterial::parse(with_source.serialize());
  KCACHE_FUZZ_CHECK(reparsed.is_ok() && *reparsed == with_source,
                    "key material with a raw source does not parse back");
}

std::vector<std::string> lines_of(const std::string& text) {
  std::vector<std::string> lines;
  std::size_t start = 0;
  while (start <= text.size()) {
    std::size_t end = text.find('\n', start);
    if (end == std::string::npos) end = text.size();
    lines.push_back(text.substr(start, end - start));
    start = end + 1;
  }
  return lines;
}

void check_scan(const std::vector<std::string>& pieces) {
  const std::string& source = pieces.front();
  std::vector<Header> headers;
  for (std::size_t i = 1; i < pieces.size(); ++i) {
    const std::size_t newline = pieces[i].find('\n');
    headers.push_back({pieces[i].substr(0, newline),
                       newline == std::string::npos ? "" : pieces[i].substr(newline + 1)});
  }
  NoDiskEnv env;
  const IncludeModel model(SearchInputs{});
  auto scan = scan_includes(source, headers, model, env, ScanSettings{});
  KCACHE_FUZZ_CHECK(scan.is_ok(),
                    "a scan of in-memory headers failed: " + scan.status().to_string());
  // Two in-memory headers of one name are refused before any scan
  // (key_builder.cpp): which one a scan reads is not an invariant.
  std::set<std::string> distinct;
  for (const Header& header : headers) distinct.insert(normal_relative(header.name));
  if (distinct.size() != headers.size()) return;
  // An unkeyable scan stops where it learns so: its list is not a key's.
  if (!scan->unkeyable.empty()) {
    KCACHE_FUZZ_CHECK(!scan->searched_everywhere, "an unkeyable scan searched everywhere");
    return;
  }

  std::set<std::string> names;
  std::set<std::pair<std::string, std::string>> reported;
  for (std::size_t i = 0; i < scan->headers.size(); ++i) {
    const ScannedHeader& found = scan->headers[i];
    KCACHE_FUZZ_CHECK(found.location.starts_with("memory:"), "a header from " + found.location);
    auto header = std::find_if(headers.begin(), headers.end(), [&](const Header& h) {
      return "memory:" + h.name == found.location;
    });
    KCACHE_FUZZ_CHECK(header != headers.end(), "reported a header that was not given");
    KCACHE_FUZZ_CHECK(found.digest == sha256_field(header->content),
                      "header digest is not its content's");
    names.insert(found.name);
    KCACHE_FUZZ_CHECK(reported.insert({found.name, found.location}).second,
                      "header reported twice");
    KCACHE_FUZZ_CHECK(i == 0 || std::tie(scan->headers[i - 1].name, scan->headers[i - 1].location) <
                                    std::tie(found.name, found.location),
                      "headers are not sorted");
  }
  // What the source includes directly is found; an `#include MACRO` that
  // no text defines makes the scan unkeyable (it returned above).
  bool defines_macro = false;
  for (const std::string& piece : pieces) {
    defines_macro = defines_macro || piece.find("MACRO") != piece.rfind("MACRO") ||
                    piece.find("define") != std::string::npos;
  }
  for (const std::string& line : lines_of(source)) {
    if (line == "#include MACRO") {
      KCACHE_FUZZ_CHECK(defines_macro, "#include MACRO of an undefined macro was keyed");
    }
    for (const Header& header : headers) {
      if (header.name.find_first_of("\"\n") == std::string::npos &&
          line == "#include \"" + header.name + "\"") {
        KCACHE_FUZZ_CHECK(names.contains(header.name), "missed #include \"" + header.name + "\"");
      }
    }
  }
  // With distinct names, the order in which headers are given is irrelevant.
  std::set<std::string> given;
  for (const Header& header : headers) given.insert(header.name);
  if (given.size() == headers.size() && headers.size() > 1) {
    std::vector<Header> reversed(headers.rbegin(), headers.rend());
    auto again = scan_includes(source, reversed, model, env, ScanSettings{});
    KCACHE_FUZZ_CHECK(again.is_ok() && again->searched_everywhere == scan->searched_everywhere &&
                          again->headers.size() == scan->headers.size(),
                      "header order changed the scan");
    for (std::size_t i = 0; i < scan->headers.size(); ++i) {
      KCACHE_FUZZ_CHECK(again->headers[i].name == scan->headers[i].name &&
                            again->headers[i].digest == scan->headers[i].digest,
                        "header order changed the scan");
    }
  }
}

}  // namespace
}  // namespace kcache::fuzz

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  using namespace kcache::fuzz;
  const std::string_view text = as_text(data, size);
  check_field_text(text);
  std::vector<std::string> pieces = split_pieces(text);
  if (pieces.empty()) pieces.emplace_back();
  check_field_encoding(pieces);
  check_scan(pieces);
  return 0;
}
