// kcache explain: why two keys differ, or why a request misses the cache
// ("why did my copied cache miss?"): each part of the key material that
// differs (compiler build, target, an option, a header's content), by name.
#include <kcache/admin.h>
#include <kcache/advanced.h>
#include <kcache/cache.h>

#include <algorithm>
#include <iostream>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include "commands/commands.h"
#include "support/failure_report.h"
#include "support/human_text.h"
#include "support/json_text.h"
#include "support/request_flags.h"
#include "support/user_cache.h"

namespace kcache::tool {
namespace {

struct ExplainArguments {
  std::vector<std::string> keys;
  std::string db;  // of both keys' entries, when a key is in several
  RequestFlags request;
  bool json = false;
};

// One part of the key that differs between two materials. A part is a
// field and its occurrence (the second "header" is not the first).
struct Difference {
  std::string field;
  std::size_t occurrence = 0;
  std::optional<std::string> first, second;  // nullopt: absent there
};

// What the material's fields mean, for people.
std::string field_words(const std::string& name) {
  static const std::map<std::string, std::string> kWords = {
      {"backend", "the backend"},
      {"compiler.id", "the compiler"},
      {"compiler.version", "the compiler's build"},
      {"target.arch", "the architecture"},
      {"target.features", "the target's features"},
      {"source", "the source"},
      {"options", "the options"},
      {"option", "an option"},
      {"kernel", "a kernel name"},
      {"header", "a header (its name and content)"},
      {"headers.scan", "the headers found on disk"},
      {"define", "a macro"},
      {"include_dir", "an include folder"},
      {"kcache.key", "kcache's key format"},
      {"entry.format", "the entry format"},
  };
  auto it = kWords.find(name);
  return it == kWords.end() ? name : it->second + " (" + name + ")";
}

std::vector<Difference> differences(const KeyMaterial& a, const KeyMaterial& b) {
  // Fields by (name, occurrence), in the order they first appear.
  using Part = std::pair<std::string, std::size_t>;
  std::vector<Part> order;
  std::map<Part, std::string> in_a, in_b;
  const auto index = [&](const KeyMaterial& material, std::map<Part, std::string>& into) {
    std::map<std::string, std::size_t> seen;
    for (const KeyField& field : material.fields()) {
      const Part part{field.name, seen[field.name]++};
      if (!in_a.contains(part) && !in_b.contains(part)) order.push_back(part);
      into[part] = field.value;
    }
  };
  index(a, in_a);
  index(b, in_b);
  std::vector<Difference> out;
  for (const Part& part : order) {
    auto x = in_a.find(part);
    auto y = in_b.find(part);
    std::optional<std::string> first, second;
    if (x != in_a.end()) first = x->second;
    if (y != in_b.end()) second = y->second;
    if (first == second) continue;
    out.push_back({part.first, part.second, first, second});
  }
  return out;
}

// A value as one short line: long or many-line values (a source, a
// header) by their size and where they first differ from `other`.
std::string shown(const std::optional<std::string>& value,
                  const std::optional<std::string>& other) {
  if (!value) return "(absent)";
  const std::string& text = *value;
  if (text.size() <= 80 && text.find('\n') == std::string::npos) return "\"" + text + "\"";
  std::size_t at = 0;
  if (other) {
    while (at < text.size() && at < other->size() && text[at] == (*other)[at]) ++at;
  }
  std::string near = text.substr(at, 40);
  std::replace(near.begin(), near.end(), '\n', ' ');
  return std::to_string(text.size()) + " bytes" +
         (other ? ", from byte " + std::to_string(at) + ": \"" + near + "\"" : "");
}

nlohmann::json differences_json(const std::vector<Difference>& found) {
  nlohmann::json out = nlohmann::json::array();
  for (const Difference& d : found) {
    out.push_back({{"field", d.field},
                   {"occurrence", d.occurrence},
                   {"first", d.first ? nlohmann::json(*d.first) : nlohmann::json(nullptr)},
                   {"second", d.second ? nlohmann::json(*d.second) : nlohmann::json(nullptr)}});
  }
  return out;
}

void print_differences(const std::vector<Difference>& found, const std::string& first_name,
                       const std::string& second_name) {
  if (found.empty()) {
    std::cout << "  no part of the key differs\n";
    return;
  }
  for (const Difference& d : found) {
    std::cout << "  " << bold(field_words(d.field))
              << (d.occurrence > 0 ? " #" + std::to_string(d.occurrence + 1) : "") << "\n"
              << "    " << first_name << ": " << shown(d.first, d.second) << "\n"
              << "    " << second_name << ": " << shown(d.second, d.first) << "\n";
  }
}

// The entry of a key prefix, read whole (without its binary).
int entry_of(Cache& cache, const std::string& prefix, const std::string& db, StoredEntry& out) {
  EntryInfo info;
  if (int status = find_entry(cache, prefix, db, info); status != 0) return status;
  auto all = CacheAdmin(cache).read_entries(info.db);
  if (!all) return report_failure(all.status().message());
  for (StoredEntry& entry : *all) {
    if (entry.info.key == info.key) {
      out = std::move(entry);
      return 0;
    }
  }
  return report_failure("entry " + info.key.hex() + " went while it was read");
}

int explain_keys(Cache& cache, const ExplainArguments& args) {
  StoredEntry a, b;
  if (int status = entry_of(cache, args.keys[0], args.db, a); status != 0) return status;
  if (int status = entry_of(cache, args.keys[1], args.db, b); status != 0) return status;
  auto first = KeyMaterial::parse(a.material);
  auto second = KeyMaterial::parse(b.material);
  if (!first || !second) return report_failure("an entry's key material does not parse");
  const auto found = differences(*first, *second);
  if (args.json) {
    std::cout << json_text(nlohmann::json{{"first", a.info.key.hex()},
                                          {"second", b.info.key.hex()},
                                          {"differences", differences_json(found)}},
                           2)
              << "\n";
    return 0;
  }
  std::cout << "first  " << a.info.key.hex() << " (" << a.info.db << ")\n"
            << "second " << b.info.key.hex() << " (" << b.info.db << ")\n"
            << found.size() << (found.size() == 1 ? " part differs" : " parts differ") << ":\n";
  print_differences(found, "first ", "second");
  return 0;
}

// A request against the cache: a hit, or the entries closest to it (of
// its backend, fewest differences first) and how they differ.
int explain_request(Cache& cache, const ExplainArguments& args) {
  KernelRequest request;
  std::unique_ptr<Compiler> compiler;
  if (int status = make_request(args.request, request, compiler); status != 0) return status;
  auto keyed = AdvancedCache(cache).key_for(request, *compiler);
  if (!keyed) return report_failure("cannot key the request: " + keyed.status().message());
  const auto& [key, material] = *keyed;
  auto all = CacheAdmin(cache).list();
  if (!all) return report_failure(all.status().message());
  std::vector<std::string> dbs;
  for (const EntryInfo& e : *all) {
    if (std::find(dbs.begin(), dbs.end(), e.db) == dbs.end()) dbs.push_back(e.db);
  }
  struct Near {
    StoredEntry entry;
    std::vector<Difference> found;
  };
  std::vector<Near> near;
  std::optional<EntryInfo> hit;
  for (const std::string& db : dbs) {
    auto entries = CacheAdmin(cache).read_entries(db);
    if (!entries) return report_failure(entries.status().message());
    for (StoredEntry& entry : *entries) {
      if (entry.info.key == key) hit = entry.info;
      auto parsed = KeyMaterial::parse(entry.material);
      if (!parsed || entry.info.backend != args.request.backend) continue;
      near.push_back({std::move(entry), differences(material, *parsed)});
    }
  }
  std::stable_sort(near.begin(), near.end(),
                   [](const Near& x, const Near& y) { return x.found.size() < y.found.size(); });
  if (near.size() > 3) near.resize(3);
  if (args.json) {
    nlohmann::json closest = nlohmann::json::array();
    for (const Near& n : near) {
      closest.push_back({{"key", n.entry.info.key.hex()},
                         {"db", n.entry.info.db},
                         {"differences", differences_json(n.found)}});
    }
    std::cout << json_text(nlohmann::json{{"key", key.hex()},
                                          {"in_cache", hit.has_value()},
                                          {"db", hit ? hit->db : ""},
                                          {"closest", closest}},
                           2)
              << "\n";
    return 0;
  }
  std::cout << "the request's key is " << key.hex() << "\n";
  if (hit) {
    std::cout << "it is in the cache (" << hit->db << "): a lookup hits\n";
    return 0;
  }
  if (near.empty()) {
    std::cout << "it is not in the cache, which holds no entry of backend " << args.request.backend
              << " to compare it with\n";
    return 0;
  }
  std::cout << "it is not in the cache; the closest entries of backend " << args.request.backend
            << ", and how the request differs from each:\n";
  for (const Near& n : near) {
    std::cout << n.entry.info.key.hex().substr(0, 16) << " (" << n.entry.info.db
              << "): " << n.found.size()
              << (n.found.size() == 1 ? " part differs" : " parts differ") << "\n";
    print_differences(n.found, "request", "entry  ");
  }
  return 0;
}

int run_explain(const ExplainArguments& args) {
  const bool request = !args.request.source.empty() || !args.request.backend.empty();
  if (request == (args.keys.size() == 2) || (!request && args.keys.size() != 2) ||
      (request && (args.request.source.empty() || args.request.backend.empty()))) {
    std::cerr << "kcache: explain takes two keys (kcache explain KEY1 KEY2), or a request "
                 "(kcache explain --backend B --source FILE [...]) to look for in the cache\n";
    return 2;
  }
  auto cache = open_cache();
  if (!cache) return 1;
  return request ? explain_request(*cache, args) : explain_keys(*cache, args);
}

}  // namespace

Runner add_explain_command(CLI::App& app) {
  auto args = std::make_shared<ExplainArguments>();
  CLI::App* cmd = app.add_subcommand(
      "explain", "Say which parts of two keys differ, or why a request misses the cache");
  cmd->add_option("keys", args->keys, "Two keys (or their starts) to compare")->expected(0, 2);
  cmd->add_option("--db", args->db, "With keys: their entries' database, when a key is in several");
  add_request_flags(cmd, args->request, /*required=*/false);
  cmd->add_flag("--json", args->json, "Print JSON");
  return [args] { return run_explain(*args); };
}

}  // namespace kcache::tool
