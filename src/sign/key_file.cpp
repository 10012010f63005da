#include "sign/key_file.h"

#include <cstdio>
#include <filesystem>
#include <span>
#include <string_view>

#include "base/hash.h"
#include "env/trusted_path.h"

namespace kcache {
namespace {

constexpr std::string_view kPublicTag = "kcache-ed25519-public";
constexpr std::string_view kSecretTag = "kcache-ed25519-private";
// A key file is one short line; anything much larger is not one.
constexpr std::uint64_t kMaxKeyFile = 4096;

std::string octal_mode(mode_t mode) {
  char text[8];
  std::snprintf(text, sizeof text, "%04o", static_cast<unsigned>(mode & 07777));
  return text;
}

// What stat says of `path`, a link followed: a key file named on the
// command line may be a link to where keys are kept.
Result<FileInfo> file_info_through_links(const std::string& path, const Env& env) {
  auto info = env.file_info(path);
  if (!info || info->type != FileType::kSymlink) return info;
  std::error_code error;
  const auto target = std::filesystem::canonical(path, error);
  if (error) return Status::not_found("cannot follow the link " + path + ": " + error.message());
  return env.file_info(target.string());
}

// The hex digits after `tag` on the first line of the file at `path`.
Result<std::string> key_text(const std::string& path, std::string_view tag, const Env& env) {
  auto info = file_info_through_links(path, env);
  if (!info) return info.status();
  if (info->type != FileType::kRegular) {
    return Status::invalid_argument(path + " is not a regular file, so not a key file");
  }
  if (info->size > kMaxKeyFile) {
    return Status::invalid_argument(path + " is too large to be a kcache key file");
  }
  auto bytes = env.read_file(path);
  if (!bytes) return bytes.status();
  const std::string_view whole(reinterpret_cast<const char*>(bytes->data.get()), bytes->size);
  std::string_view text = whole.substr(0, whole.find('\n'));
  const auto first_space = text.find(' ');
  if (text.substr(0, first_space) != tag || first_space == std::string_view::npos) {
    // The usual slip the other way: the private key named where the
    // public one goes (and perhaps handed around as one).
    if (tag == kPublicTag && text.substr(0, first_space) == kSecretTag) {
      return Status::invalid_argument(
          path + " is a private key, not a public one: trust and check with its .pub file (" +
          (path.ends_with(".pub") ? "and keep this one secret: a private key under a .pub name "
                                    "may have been shared"
                                  : path + ".pub, made with it") +
          ")");
    }
    return Status::invalid_argument(path + " is not a kcache " +
                                    std::string(tag == kPublicTag ? "public" : "private") +
                                    " key file (it should start with '" + std::string(tag) + " ')");
  }
  // One key a file: a second one (keys joined with cat) would be passed
  // over without a word, and the signer it names not trusted. Asked once
  // the first line is a key's: a script is not a key file of two lines.
  if (text.size() < whole.size() &&
      whole.find_first_not_of(" \t\r\n", text.size()) != std::string_view::npos) {
    return Status::invalid_argument(path + " holds more than one line; a key file holds one key" +
                                    (tag == kPublicTag
                                         ? std::string(" (give each its own .pub file, in a folder "
                                                       "KCACHE_TRUSTED_KEYS names)")
                                         : std::string(" (as kcache keygen writes it)")));
  }
  text.remove_prefix(first_space + 1);
  return std::string(text.substr(0, text.find(' ')));
}

// The key `hex` (key_text's) spells, from the file at `path`.
template <class Key>
Result<Key> parse_key(const std::string& path, const std::string& hex) {
  Key key{};
  if (!read_hex(hex, key)) {
    return Status::invalid_argument(path + ": the key is not " + std::to_string(2 * key.size()) +
                                    " hex digits (the file is damaged)");
  }
  return key;
}

template <class Key>
Result<Key> read_key(const std::string& path, std::string_view tag, const Env& env) {
  auto hex = key_text(path, tag, env);
  if (!hex) return hex.status();
  return parse_key<Key>(path, *hex);
}

std::vector<std::uint8_t> line_of(std::string_view tag, std::span<const std::uint8_t> key,
                                  std::string_view comment) {
  // Appended piece by piece: gcc 12 at -O2 warns (-Wrestrict, wrongly)
  // on a chain of std::string + here.
  std::string line(tag);
  line += ' ';
  line += to_hex(key);
  if (!comment.empty()) {
    line += ' ';
    line += comment;
  }
  line += '\n';
  return {line.begin(), line.end()};
}

}  // namespace

std::string key_id(const Ed25519PublicKey& key) { return to_hex(sha256(key)).substr(0, 16); }

Result<Ed25519PublicKey> read_public_key(const std::string& path, const Env& env) {
  return read_key<Ed25519PublicKey>(path, kPublicTag, env);
}

Result<Ed25519SecretKey> read_secret_key(const std::string& path, const Env& env) {
  auto info = file_info_through_links(path, env);
  if (!info) return info.status();
  if (info->type != FileType::kRegular) {
    return Status::invalid_argument(path + " is not a regular file, so not a key file");
  }
  // The usual slip: the .pub file named where the private key belongs.
  if (read_public_key(path, env)) {
    const std::string pair = path.ends_with(".pub") ? path.substr(0, path.size() - 4) : "";
    return Status::invalid_argument(
        path + " is a public key; signing takes the private key" +
        (pair.empty() ? std::string(" made with it") : " (" + pair + ", made with it)"));
  }
  // What the file is before how it is kept: a script (mode 0755) is not a
  // private key others can read, and chmod would not make it one.
  auto hex = key_text(path, kSecretTag, env);
  if (!hex) return hex.status();
  if ((info->mode & 077) != 0) {
    return Status::invalid_argument(path + " is a private key that others can read (mode " +
                                    octal_mode(info->mode) + "); run 'chmod 600 " + path +
                                    "' (and make a new key if others may have copied it)");
  }
  auto key = parse_key<Ed25519SecretKey>(path, *hex);
  if (!key) return key.status();
  // Whoever could have replaced it (or a link to it) chooses what is
  // signed in this key's name: held to the rule packages are.
  if (auto reason = untrusted_reason_through_links(path, env)) {
    return Status::invalid_argument(path +
                                    " is a private key another user could have written or "
                                    "replaced (" +
                                    *reason + "); keep it where only you can write");
  }
  auto whole = ed25519_key_is_whole(*key);
  if (!whole) return whole.status();
  if (!*whole) {
    return Status::invalid_argument(path +
                                    " is damaged: its public half is not the one its seed makes, "
                                    "so nothing it signed could be checked; make a new key");
  }
  return key;
}

Status write_key_pair(const std::string& path, const Ed25519KeyPair& pair, bool overwrite,
                      Env& env) {
  const std::string public_path = path + ".pub";
  // Both looked at before either is written: a pair is never left half
  // replaced (a folder where the .pub goes failed only after the private
  // key was). What is there is looked at itself, not through a link.
  for (const std::string& p : {path, public_path}) {
    auto there = env.file_info(p);
    if (!there) {
      if (there.status().code() == StatusCode::kNotFound) continue;
      return there.status();
    }
    if (there->type != FileType::kRegular) {
      return Status::invalid_argument(
          p + " is " +
          (there->type == FileType::kDirectory ? "a folder"
           : there->type == FileType::kSymlink ? "a symbolic link"
                                               : "not a regular file") +
          "; a key is written only as a file of its own (name another path)");
    }
    if (!overwrite) return Status::invalid_argument(p + " exists; give --force to replace it");
  }
  // A folder that is not there is said as such, not as the temporary
  // file that could not be made in it.
  if (const std::string folder = std::filesystem::path(path).parent_path().string();
      !folder.empty() && !env.is_dir(folder)) {
    return Status::not_found("cannot write " + path + ": its folder " + folder +
                             " does not exist (or is not a folder)");
  }
  const std::string id = key_id(pair.public_key);
  if (Status s = env.write_file_atomic(path, line_of(kSecretTag, pair.secret_key, ""),
                                       /*sync=*/true, 0600);
      !s.is_ok()) {
    return s;
  }
  return env.write_file_atomic(public_path, line_of(kPublicTag, pair.public_key, "key " + id),
                               /*sync=*/true, 0644);
}

}  // namespace kcache
