#include "core/include_scanner.h"

#include <algorithm>
#include <cctype>
#include <deque>
#include <filesystem>
#include <set>

#include "format/hash.h"

namespace kcache {
namespace {

constexpr std::size_t kMaxHeaders = 10000;
constexpr std::uint64_t kMaxBytes = 256ull << 20;

struct Include {
  std::string name;
  bool quoted = false;
  bool unreadable = false;  // `#include MACRO`
};

std::vector<Include> find_includes(std::string_view text) {
  std::vector<Include> found;
  std::size_t pos = 0;
  while (pos < text.size()) {
    std::size_t end = text.find('\n', pos);
    if (end == std::string_view::npos) end = text.size();
    std::string_view line = text.substr(pos, end - pos);
    pos = end + 1;

    auto skip_space = [&line] {
      while (!line.empty() && (line.front() == ' ' || line.front() == '\t')) line.remove_prefix(1);
    };
    skip_space();
    if (line.empty() || line.front() != '#') continue;
    line.remove_prefix(1);
    skip_space();
    if (!line.starts_with("include")) continue;
    line.remove_prefix(7);
    if (!line.empty() &&
        (std::isalnum(static_cast<unsigned char>(line.front())) || line.front() == '_')) {
      continue;  // #include_next and friends are toolkit territory
    }
    skip_space();
    if (line.empty()) continue;
    char open = line.front();
    char close = open == '"' ? '"' : (open == '<' ? '>' : '\0');
    std::size_t stop = close != '\0' ? line.find(close, 1) : std::string_view::npos;
    if (close == '\0' || stop == std::string_view::npos) {
      found.push_back({"", false, true});
      continue;
    }
    found.push_back({std::string(line.substr(1, stop - 1)), open == '"', false});
  }
  return found;
}

std::string parent_of(const std::string& path) {
  std::size_t slash = path.find_last_of('/');
  return slash == std::string::npos ? std::string(".") : path.substr(0, slash);
}

class Scanner {
 public:
  Scanner(const std::vector<Header>& memory, const std::vector<std::string>& dirs,
          const std::vector<std::string>& toolkit_dirs, const Env& env)
      : memory_(memory), dirs_(dirs), env_(env) {
    for (const auto& dir : toolkit_dirs) toolkit_.insert(normal(dir));
  }

  Result<IncludeScan> run(const std::string& source) {
    struct Pending {
      std::string text;
      std::string folder;  // for quoted includes; empty for the source and memory headers
    };
    std::deque<Pending> pending{{source, ""}};
    while (!pending.empty()) {
      Pending item = std::move(pending.front());
      pending.pop_front();
      for (const Include& include : find_includes(item.text)) {
        if (include.unreadable) {
          whole_dirs_ = true;
          continue;
        }
        auto resolved = resolve(include, item.folder);
        if (!resolved) return resolved.status();
        if (!resolved->has_value()) continue;  // a toolkit header
        auto& [location, text] = **resolved;
        if (!seen_.insert(include.name + "\n" + location).second) continue;
        if (result_.headers.size() >= kMaxHeaders || (bytes_ += text.size()) > kMaxBytes) {
          return Status::invalid_argument("the source includes more headers than kcache can key");
        }
        result_.headers.push_back({include.name, location, sha256_field(text)});
        pending.push_back({std::move(text), location == "memory" ? "" : parent_of(location)});
      }
    }
    if (whole_dirs_) {
      for (const auto& dir : dirs_) {
        if (Status s = hash_tree(dir, dir); !s.is_ok()) return s;
      }
      result_.hashed_whole_dirs = true;
    }
    std::sort(result_.headers.begin(), result_.headers.end(), [](const auto& a, const auto& b) {
      return std::tie(a.name, a.location) < std::tie(b.name, b.location);
    });
    return std::move(result_);
  }

 private:
  // (location, content) of the header, nullopt if it is not ours to hash.
  Result<std::optional<std::pair<std::string, std::string>>> resolve(const Include& include,
                                                                     const std::string& folder) {
    for (const auto& header : memory_) {
      if (header.name == include.name) return {std::pair{std::string("memory"), header.content}};
    }
    std::vector<std::string> folders;
    if (include.quoted && !folder.empty()) folders.push_back(folder);
    folders.insert(folders.end(), dirs_.begin(), dirs_.end());
    for (const auto& dir : folders) {
      const std::string path = dir + "/" + include.name;
      if (toolkit_.contains(normal(dir))) {
        if (env_.exists(path)) return std::optional<std::pair<std::string, std::string>>{};
        continue;
      }
      auto bytes = env_.read_file(path);
      if (bytes) {
        auto span = bytes->span();
        return {std::pair{path, std::string(span.begin(), span.end())}};
      }
      if (bytes.status().code() != StatusCode::kNotFound && env_.exists(path) &&
          !env_.is_dir(path)) {
        return Status::io_error("cannot read header " + path +
                                " to key it: " + bytes.status().message());
      }
    }
    return std::optional<std::pair<std::string, std::string>>{};
  }

  Status hash_tree(const std::string& root, const std::string& dir) {
    auto entries = env_.list_dir(dir);
    if (!entries) return Status::ok();  // a missing include dir holds nothing
    std::sort(entries->begin(), entries->end(),
              [](const DirEntry& a, const DirEntry& b) { return a.name < b.name; });
    for (const auto& entry : *entries) {
      std::string path = dir + "/" + entry.name;
      if (entry.is_dir) {
        if (Status s = hash_tree(root, path); !s.is_ok()) return s;
        continue;
      }
      auto bytes = env_.read_file(path);
      if (!bytes) return Status::io_error("cannot read " + path + " to key it");
      if (result_.headers.size() >= kMaxHeaders || (bytes_ += bytes->size) > kMaxBytes) {
        return Status::invalid_argument("include directory " + root + " is too large to key");
      }
      result_.headers.push_back(
          {path.substr(root.size() + 1), "dir:" + root, "sha256:" + to_hex(sha256(bytes->span()))});
    }
    return Status::ok();
  }

  static std::string normal(const std::string& dir) {
    std::string out = std::filesystem::path(dir).lexically_normal().string();
    while (out.size() > 1 && out.back() == '/') out.pop_back();
    return out;
  }

  const std::vector<Header>& memory_;
  const std::vector<std::string>& dirs_;
  std::set<std::string> toolkit_;
  const Env& env_;
  IncludeScan result_;
  std::set<std::string> seen_;
  std::uint64_t bytes_ = 0;
  bool whole_dirs_ = false;
};

}  // namespace

Result<IncludeScan> scan_includes(const std::string& source, const std::vector<Header>& memory,
                                  const std::vector<std::string>& include_dirs,
                                  const std::vector<std::string>& toolkit_dirs, const Env& env) {
  return Scanner(memory, include_dirs, toolkit_dirs, env).run(source);
}

}  // namespace kcache
