#include "inputs/include_scanner.h"

#include <algorithm>
#include <deque>
#include <map>
#include <memory>
#include <optional>
#include <set>
#include <unordered_map>

#include "base/hash.h"

namespace kcache {
namespace {

using Kind = IncludeDirective::Kind;

struct Pending {
  Includer from;
  std::shared_ptr<const SourceDirectives> directives;
};

struct Candidate {
  std::string name;
  bool quoted = false;
};

bool is_identifier(std::string_view text) {
  if (text.empty() || std::isdigit(static_cast<unsigned char>(text.front()))) return false;
  return std::all_of(text.begin(), text.end(), [](char c) {
    return std::isalnum(static_cast<unsigned char>(c)) || c == '_' || c == '$';
  });
}

std::string trim(std::string_view text) {
  const auto first = text.find_first_not_of(" \t\v\f\r\n");
  if (first == std::string_view::npos) return {};
  return std::string(text.substr(first, text.find_last_not_of(" \t\v\f\r\n") - first + 1));
}

class Scanner {
 public:
  Scanner(const std::vector<Header>& memory, const IncludeModel& model, const Env& env,
          const ScanSettings& settings)
      : memory_(memory), model_(model), env_(env), settings_(settings) {}

  Result<IncludeScan> run(std::string_view source) {
    // The -D options, read as the #define lines they stand for (a value
    // may test for a header, or define a macro that does).
    const Includer from_main{Includer::Kind::kMain, {}};
    bool options_test = false;
    if (!settings_.defines.empty()) {
      std::string lines;
      for (const auto& define : settings_.defines) {
        const std::size_t eq = define.find('=');
        std::string line = "#define " + define.substr(0, eq) + " " +
                           (eq == std::string::npos ? "1" : define.substr(eq + 1));
        std::replace(line.begin(), line.end(), '\n', ' ');
        lines += line + "\n";
        options_test = options_test || define.find("__has_") != std::string::npos;
      }
      auto defined = std::make_shared<const SourceDirectives>(find_directives(lines));
      learn(*defined);
      pending_.push_back({from_main, std::move(defined)});
    }
    // A source that cannot name a file needs no lexing (its macros matter
    // only to its own computed includes), unless a forced include or an
    // option may define a macro that wraps __has_include for it to call.
    std::shared_ptr<const SourceDirectives> main;
    if (!may_read_files(source) && model_.forced_includes().empty() && !options_test) {
      main = std::make_shared<const SourceDirectives>();
    } else if (settings_.digests != nullptr) {
      main = settings_.digests->text(source, true).directives;
    } else {
      main = std::make_shared<const SourceDirectives>(find_directives(source));
    }
    learn(*main);
    for (const auto& file : model_.forced_includes()) {
      if (Status s = resolve(file, model_.forced_places(file), Kind::kInclude); !s.is_ok()) {
        return s;
      }
    }
    pending_.push_back({from_main, main});
    // Follow literal includes; then settle the computed ones, again each
    // time a header found holds more of either (a macro defined in a header
    // reached later still counts), until nothing new is found.
    std::size_t settled_with = 0;  // the definitions known when last settled
    while (!pending_.empty() || definitions_ != settled_with) {
      if (Status s = follow(); !s.is_ok()) return s;
      if (!result_.unkeyable.empty()) return std::move(result_);
      settled_with = definitions_;
      if (Status s = settle_computed(); !s.is_ok()) return s;
      if (!result_.unkeyable.empty()) return std::move(result_);
    }
    if (everywhere_) {
      if (!settings_.everywhere_is_enough) {
        result_.unkeyable = "an #include through a macro kcache cannot expand (it may name any " +
                            std::string("file), or a file with trigraphs: ") + why_everywhere_;
        return std::move(result_);
      }
      if (Status s = key_everything(); !s.is_ok()) return s;
      result_.searched_everywhere = true;
    }
    std::sort(result_.headers.begin(), result_.headers.end(), [](const auto& a, const auto& b) {
      return std::tie(a.name, a.location) < std::tie(b.name, b.location);
    });
    result_.headers.erase(std::unique(result_.headers.begin(), result_.headers.end()),
                          result_.headers.end());
    return std::move(result_);
  }

 private:
  static std::string where(const Includer& from) {
    return from.kind == Includer::Kind::kMain ? std::string("the source") : from.path;
  }

  Status follow() {
    while (!pending_.empty() && result_.unkeyable.empty()) {
      Pending item = std::move(pending_.front());
      pending_.pop_front();
      if (item.directives->uncertain && !everywhere_) {
        everywhere_ = true;
        why_everywhere_ = "what " + where(item.from) + " includes cannot be told for sure";
      }
      for (const MacroCall& call : item.directives->calls) {
        calls_.push_back({call, item.from});
        ++definitions_;  // a new one to settle
      }
      for (const IncludeDirective& include : item.directives->includes) {
        if (include.computed()) {
          computed_.push_back({include, item.from});
          ++definitions_;  // a new one to settle
          continue;
        }
        // #include_next resumes past the folder the includer was found in,
        // which may be one of the quoted search's (gcc starts over at the
        // first -iquote folder for a file found beside its includer):
        // every candidate of the quoted search is keyed, a superset.
        std::vector<Place> places =
            model_.places(include.name, include.quoted || include.next, item.from);
        if (include.next) {
          for (auto& place : places) place.certain = false;
        }
        if (Status s = resolve(include.name, places, include.kind); !s.is_ok()) {
          return s;
        }
      }
    }
    return Status::ok();
  }

  // Looks `name` up in `places`, keys what is found, queues its includes.
  Status resolve(const std::string& name, const std::vector<Place>& places, Kind kind) {
    bool found = false;
    for (const Place& place : places) {
      std::optional<bool> hit = place.kind == Place::Kind::kMemory ? in_memory(name, place, kind)
                                                                   : on_disk(name, place, kind);
      if (!result_.unkeyable.empty()) return Status::ok();
      if (!hit.has_value()) return status_;
      if (!*hit) continue;
      found = true;
      if (place.certain) return Status::ok();
    }
    if (!found && !settings_.unfound_is_compilers && kind != Kind::kHasInclude) {
      result_.unkeyable =
          "header '" + name + "' is in none of the folders kcache knows this compiler searches";
    }
    return Status::ok();
  }

  // true: found (and keyed); false: not there; nullopt: an error (status_).
  std::optional<bool> in_memory(const std::string& name, const Place& place, Kind kind) {
    const Header* header = nullptr;
    if (place.exact) {
      for (const auto& h : memory_) {
        if (header == nullptr && h.name == name) header = &h;
      }
    } else {
      const std::string joined = normal_relative(place.dir.empty() ? name : place.dir + "/" + name);
      if (joined.starts_with("../") || joined == "..") {
        // Out of the folder the headers are written to, into one of
        // kcache's own (a temporary folder): nothing kcache can key.
        result_.unkeyable = "include \"" + name + "\" climbs out of the folder kcache writes the " +
                            "in-memory headers to";
        return true;
      }
      for (const auto& h : memory_) {
        if (header == nullptr && normal_relative(h.name) == joined) header = &h;
      }
    }
    if (header == nullptr) return false;
    if (!add_bytes(header->content.size())) return true;
    FileContent content = text_content(header->content);
    result_.headers.push_back({name, "memory:" + header->name, content.digest});
    if (kind != Kind::kEmbed && seen_.insert("memory:" + header->name).second) {
      pending_.push_back({{Includer::Kind::kMemory, header->name}, content.directives});
      learn(*pending_.back().directives);
    }
    return true;
  }

  std::optional<bool> on_disk(const std::string& name, const Place& place, Kind kind) {
    const std::string path = place.dir.empty() ? name : place.dir + "/" + name;
    // A path is looked at once a scan, however many files include it (a
    // library's common header is met from hundreds): one stat, one probe.
    auto [look, first] = looked_.try_emplace(path, Look{FileStamp{}});
    if (first) look->second.stamp = env_.stamp(path);
    const Result<FileStamp>& stamp = look->second.stamp;
    // What a toolkit folder holds is the compiler's identity's business
    // (checked when the compiler is made): no probe is needed to reuse
    // the scan.
    const bool probe = !place.toolkit && !look->second.probed;
    if (probe) look->second.probed = true;
    if (!stamp) {
      if (stamp.status().code() == StatusCode::kNotFound) {
        if (probe) result_.probes.push_back({path, std::nullopt});
        return false;
      }
      status_ = Status::io_error("cannot look at header " + path +
                                 " to key it: " + stamp.status().message());
      return std::nullopt;
    }
    if (probe) {
      result_.probes.push_back({path, *stamp});
      if (changed_recently(*stamp)) result_.reusable = false;
    }
    if (stamp->type == FileType::kDirectory) return false;  // compilers pass folders by
    if (stamp->type != FileType::kRegular) {
      result_.unkeyable = "header " + path + " is not a regular file";
      return true;
    }
    if (place.toolkit) return true;  // covered by the compiler's identity
    auto content = settings_.digests ? settings_.digests->get(path, *stamp, env_)
                                     : read_file_content(path, env_);
    if (!content) {
      status_ = Status::io_error("cannot read header " + path +
                                 " to key it: " + content.status().message());
      return std::nullopt;
    }
    if (!add_bytes(content->size)) return true;
    result_.headers.push_back({name, path, content->digest});
    if (!look->second.keyed) result_.files.push_back(stamp->id);
    look->second.keyed = true;
    folders_.insert(place.dir.empty()
                        ? path.substr(0, std::max<std::size_t>(path.find_last_of('/'), 1))
                        : place.dir);
    if (kind != Kind::kEmbed && kind != Kind::kHasInclude && seen_.insert(path).second) {
      learn(*content->directives);
      Pending& next = pending_.emplace_back();
      next.from.kind = Includer::Kind::kDisk;
      next.from.path = path;
      next.directives = content->directives;
    }
    return true;
  }

  // An in-memory header's digest and directives (memoized by content).
  FileContent text_content(const std::string& text) {
    if (settings_.digests != nullptr) return settings_.digests->text(text, true);
    FileContent content;
    content.digest = sha256_field(text);
    content.size = text.size();
    content.directives = std::make_shared<const SourceDirectives>(find_directives(text));
    return content;
  }

  bool add_bytes(std::uint64_t size) {
    bytes_ += size;
    if (result_.headers.size() >= settings_.max_headers || bytes_ > settings_.max_bytes) {
      result_.unkeyable = "the source reaches more headers than kcache keys (" +
                          std::to_string(settings_.max_headers) + " files or " +
                          std::to_string(settings_.max_bytes >> 20) + " MiB)";
      return false;
    }
    return true;
  }

  // The macros a computed include may be spelled with.
  void learn(const SourceDirectives& directives) {
    for (const auto& define : directives.defines) macros_[define.name].push_back(define.value);
    for (const auto& macro : directives.function_macros) {
      function_macros_[macro.name].push_back(macro);
    }
    definitions_ += directives.defines.size() + directives.function_macros.size();
  }

  // The header names `expression` can expand to, from every definition
  // seen; nullopt when it cannot be told (a function-like macro, a value
  // that is not a header name, no definition at all).
  std::optional<std::vector<Candidate>> expand(const std::string& expression, int depth) {
    const std::string text = trim(expression);
    if (text.size() >= 3 &&
        ((text.front() == '"' && text.back() == '"' && text.find('"', 1) == text.size() - 1) ||
         (text.front() == '<' && text.back() == '>' && text.find('>') == text.size() - 1))) {
      return std::vector<Candidate>{{text.substr(1, text.size() - 2), text.front() == '"'}};
    }
    if (depth > 8 || !is_identifier(text) || function_macros_.contains(text)) return std::nullopt;
    auto it = macros_.find(text);
    if (it == macros_.end() || it->second.empty()) return std::nullopt;
    std::vector<Candidate> all;
    for (const auto& value : it->second) {
      auto names = expand(value, depth + 1);
      if (!names) return std::nullopt;
      all.insert(all.end(), names->begin(), names->end());
    }
    return all;
  }

  // Every computed include seen so far, with every definition seen so far;
  // each candidate is looked up once (settled_).
  Status settle_computed() {
    settle_calls();
    for (std::size_t i = 0; i < computed_.size(); ++i) {
      const auto [include, from] = computed_[i];  // a copy: resolve() may add to computed_
      if (everywhere_) break;
      auto names = expand(include.expression, 0);
      if (!names) {
        everywhere_ = true;
        why_everywhere_ = "#include " + include.expression + " in " + where(from);
        break;
      }
      for (const auto& candidate : *names) {
        // Once per directive kind, candidate (its name and form) and
        // includer (a file on disk and an in-memory header may share a
        // name, and search from different folders).
        const std::string done = std::to_string(static_cast<int>(include.kind)) +
                                 (include.next ? "n" : "") + "\n" + include.expression + "\n" +
                                 (candidate.quoted ? "\"" : "<") + candidate.name + "\n" +
                                 std::to_string(static_cast<int>(from.kind)) + from.path;
        if (!settled_.insert(done).second) continue;
        // Which definition is in force depends on #if: each candidate is
        // keyed as the compiler would find it (for #include_next, every
        // folder, as above).
        std::vector<Place> places =
            model_.places(candidate.name, candidate.quoted || include.next, from);
        if (include.next) {
          for (auto& place : places) place.certain = false;
        }
        if (Status s = resolve(candidate.name, places, include.kind); !s.is_ok()) {
          return s;
        }
      }
    }
    return Status::ok();
  }

  // One __has_include a macro expands to: for its argument's `param`th
  // argument (the rest of them, from there, for a variadic one), or for
  // `fixed` (param -1).
  struct HasIncludeUse {
    bool next = false;
    int param = -1;
    bool rest = false;
    std::string fixed;
  };

  // The __has_includes a call of `name` expands to, from every definition
  // seen; nullopt when a parameter reaches one in a way kcache cannot
  // follow (pasted, stringified, within a header name).
  std::optional<std::vector<HasIncludeUse>> has_include_uses(const std::string& name,
                                                             std::set<std::string>& visiting) {
    if (name == "__has_include" || name == "__has_embed")
      return {{HasIncludeUse{false, 0, false, {}}}};
    if (name == "__has_include_next") return {{HasIncludeUse{true, 0, false, {}}}};
    if (visiting.size() > 32) return std::nullopt;
    // A macro is not replaced again within its own expansion.
    if (!visiting.insert(name).second) return std::vector<HasIncludeUse>{};
    std::optional<std::vector<HasIncludeUse>> all{std::in_place};
    if (auto it = macros_.find(name); it != macros_.end()) {
      for (const auto& value : it->second) {
        if (!is_identifier(value)) continue;  // `#define H __has_include` names another
        auto more = has_include_uses(value, visiting);
        if (!more) return std::nullopt;
        all->insert(all->end(), more->begin(), more->end());
      }
    }
    if (auto it = function_macros_.find(name); it != function_macros_.end()) {
      for (const FunctionMacro& macro : it->second) {
        auto calls = find_macro_calls(macro.body);
        if (!calls) return std::nullopt;
        for (const MacroCall& call : *calls) {
          auto inner = has_include_uses(call.name, visiting);
          if (!inner) return std::nullopt;
          for (const HasIncludeUse& use : *inner) {
            if (use.param < 0) {
              all->push_back(use);
              continue;
            }
            const std::string argument = argument_of(call, use);
            const auto param = std::find(macro.params.begin(), macro.params.end(), argument);
            if (param != macro.params.end()) {
              const int index = static_cast<int>(param - macro.params.begin());
              all->push_back(
                  {use.next, index, macro.variadic && param + 1 == macro.params.end(), {}});
            } else if (mentions_any(argument, macro.params)) {
              return std::nullopt;
            } else if (!argument.empty()) {
              all->push_back({use.next, -1, false, argument});
            }
          }
        }
      }
    }
    visiting.erase(name);
    return all;
  }

  static std::string argument_of(const MacroCall& call, const HasIncludeUse& use) {
    if (use.param < 0) return use.fixed;
    const auto index = static_cast<std::size_t>(use.param);
    if (index >= call.arguments.size()) return {};
    if (!use.rest) return call.arguments[index];
    std::string joined = call.arguments[index];
    for (std::size_t i = index + 1; i < call.arguments.size(); ++i) {
      joined += ", " + call.arguments[i];
    }
    return joined;
  }

  // Every macro call seen so far, with every definition seen so far: a
  // call of a macro that wraps __has_include tests for the header its
  // argument names, which is then settled as a computed __has_include.
  void settle_calls() {
    std::map<std::string, std::optional<std::vector<HasIncludeUse>>> known;  // by macro
    for (std::size_t i = 0; i < calls_.size() && !everywhere_; ++i) {
      const auto& [call, from] = calls_[i];
      auto found = known.find(call.name);
      if (found == known.end()) {
        std::set<std::string> visiting;
        found = known.emplace(call.name, has_include_uses(call.name, visiting)).first;
      }
      const auto& uses = found->second;
      if (!uses) {
        everywhere_ = true;
        why_everywhere_ = "a __has_include through macro " + call.name + " in " + where(from) +
                          " that kcache cannot follow";
        return;
      }
      for (const HasIncludeUse& use : *uses) {
        const std::string argument = argument_of(call, use);
        if (argument.empty()) continue;  // tests for nothing: the compiler's error
        if (!tested_.insert(std::to_string(i) + (use.next ? "n" : "") + argument).second) continue;
        IncludeDirective test;
        test.kind = Kind::kHasInclude;
        test.next = use.next;
        test.expression = argument;
        computed_.push_back({std::move(test), from});
      }
    }
  }

  // Every in-memory header and every file under every folder the search
  // can reach.
  Status key_everything() {
    result_.reusable = false;  // a walk's listings are not probes
    for (const auto& header : memory_) {
      if (!add_bytes(header.content.size())) return Status::ok();
      result_.headers.push_back(
          {header.name, "memory:" + header.name, text_content(header.content).digest});
    }
    std::set<std::string> roots(folders_.begin(), folders_.end());
    for (const Place& place : model_.every_place()) {
      if (place.kind == Place::Kind::kDisk && !place.toolkit) roots.insert(place.dir);
    }
    for (const auto& root : roots) {
      if (root.empty()) continue;
      if (Status s = walk(root, root, 0); !s.is_ok() || !result_.unkeyable.empty()) return s;
    }
    return Status::ok();
  }

  // A walk keys at most this much: an unsettled include under a large
  // working folder is not worth hashing a home directory for each request.
  static constexpr std::size_t kMaxWalkFiles = 4096;
  static constexpr std::uint64_t kMaxWalkBytes = 64ull << 20;

  Status walk(const std::string& root, const std::string& dir, int depth) {
    if (depth > 32) {
      result_.unkeyable = "folder " + root + " is nested too deep to key";
      return Status::ok();
    }
    auto entries = env_.list_dir(dir);
    if (!entries) return Status::ok();  // a missing include folder holds nothing
    std::sort(entries->begin(), entries->end(),
              [](const DirEntry& a, const DirEntry& b) { return a.name < b.name; });
    for (const auto& entry : *entries) {
      const std::string path = dir == "/" ? "/" + entry.name : dir + "/" + entry.name;
      auto stamp = env_.stamp(path);
      if (!stamp) continue;  // a dangling link reads as nothing
      if (stamp->type == FileType::kDirectory) {
        if (Status s = walk(root, path, depth + 1); !s.is_ok() || !result_.unkeyable.empty()) {
          return s;
        }
        continue;
      }
      if (stamp->type != FileType::kRegular) continue;
      if (++walked_files_ > kMaxWalkFiles || (walked_bytes_ += stamp->size) > kMaxWalkBytes) {
        result_.unkeyable =
            "an include kcache cannot resolve (a macro) could read any of more "
            "files than it keys, under " +
            root;
        return Status::ok();
      }
      if (!add_bytes(stamp->size)) return Status::ok();
      auto content = settings_.digests ? settings_.digests->get(path, *stamp, env_)
                                       : read_file_content(path, env_);
      if (!content) return Status::io_error("cannot read " + path + " to key it");
      result_.headers.push_back({path.substr(root.size() + 1), "dir:" + root, content->digest});
      result_.files.push_back(stamp->id);
    }
    return Status::ok();
  }

  const std::vector<Header>& memory_;
  const IncludeModel& model_;
  const Env& env_;
  const ScanSettings& settings_;
  IncludeScan result_;
  Status status_;
  std::deque<Pending> pending_;
  std::vector<std::pair<IncludeDirective, Includer>> computed_;
  std::vector<std::pair<MacroCall, Includer>> calls_;
  std::set<std::string> tested_;  // the calls' tests already queued in computed_
  std::set<std::string> seen_;
  // Every path looked at on disk, with what was there.
  struct Look {
    Result<FileStamp> stamp;
    bool probed = false;  // in result_.probes
    bool keyed = false;   // in result_.files
  };
  std::unordered_map<std::string, Look> looked_;
  std::set<std::string> settled_;
  std::set<std::string> folders_;
  std::map<std::string, std::vector<std::string>> macros_;
  std::map<std::string, std::vector<FunctionMacro>> function_macros_;
  std::uint64_t bytes_ = 0;
  // Grows with every definition learned and every computed include met.
  std::size_t definitions_ = 0;
  std::size_t walked_files_ = 0;
  std::uint64_t walked_bytes_ = 0;
  bool everywhere_ = false;
  std::string why_everywhere_;  // what set everywhere_, for the message
};

}  // namespace

Result<IncludeScan> scan_includes(std::string_view source, const std::vector<Header>& memory,
                                  const IncludeModel& model, const Env& env,
                                  const ScanSettings& settings) {
  return Scanner(memory, model, env, settings).run(source);
}

}  // namespace kcache
