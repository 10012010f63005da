// The key against the compiler: generated include graphs on disk, keyed
// with build_key_material and compiled by real gcc.
//
// The invariant (docs/design.md §1.3): the key of a request changes whenever
// a file the compiler reads changes, so a cached binary is never stale.
// gcc is the oracle, run by kcache's own command backend (make_compiler,
// "gcc -E -P -x c {in} -o {out}": the source and the in-memory headers are
// written to a folder of their own, the options given as the key holds
// them): its output is the text of every line it read.
//
// Generated, from the input read as a stream of choices (a choice past the
// end of the input is 0), in a scratch folder that is made empty for each
// input and is the working folder (gcc's too) while it runs:
//  - 1-8 headers on disk, in the folders ".", "d", "e", "s" and "s/t",
//    named a.h, b.h, c.h, m.h or t/a.h. Each holds `#pragma once` (else a
//    header reached along many paths is read once per path), 1-4
//    directives, and a line `int v_<id>;` unique to that content. Most
//    directives stand behind an `#if __has_include` (or
//    __has_include_next) of their own name, since an #include that finds
//    nothing stops gcc. They are drawn from: #include "n" and <n>; an
//    absolute #include of a file of the scratch folder; `/* c */ #include`;
//    `#inc\<newline>lude`; `%:include`; #include_next <n> and "n"; #import;
//    `#if __has_include("n")` and (<n>) around a line of its own; `#define
//    HA "n"` then `#include HA`; a lone `#define HA <n>`; a lone `#include
//    HA` (HA or HB, so definitions meet across files); `#if 0` around an
//    #include; `#include "n" // c`; a lone `#define WRAP_HAS(_X)
//    __has_include(_X)` (or _next), and `#if WRAP_HAS("n")` (or <n>)
//    behind `#ifdef WRAP_HAS` around a line of its own. Each n is one of a.h, b.h, c.h, m.h,
//    t/a.h, t/b.h, d/a.h, s/t/b.h.
//  - The main source, made the same way, and 0-3 in-memory headers
//    (KernelRequest::headers) named m.h, a.h, t/a.h, d/a.h or d/b.h.
//  - 0-6 options, in any order: -I, -iquote, -isystem and -idirafter of a
//    folder ("d", "./d" or absolute; joined or separate); -include and
//    -imacros of a header on disk (its path from the working folder) or
//    of a name n; -D of HA or HB as "n" or <n>; and 0-2
//    KernelRequest::include_dirs.
// Names come only from these lists, and every write is checked to stay
// inside the scratch folder.
//
// Checked, for a request the key accepts (one it refuses, kNotSupported,
// is compiled and never cached, and is skipped here):
//  1. Keying twice gives the same key, K1.
//  2. Every file of the scratch folder that gcc read (the command backend's
//     -MD list, CompileOutput::files_read) is keyed: a file read but not
//     keyed is a stale binary as soon as it is edited.
//  3. After one mutation (a header on disk edited, created where it may
//     shadow one found later in the search, or deleted; an in-memory header
//     edited, added or removed), the request is keyed again, K2. When
//     K2 == K1, gcc runs again, and its output must be what it was (and
//     check 2 holds again); a new key needs no second compile. A failed
//     compile's output is "error": two failures are alike, whatever their
//     messages.
//  4. A KeyMemo, used three times before the mutation and once after,
//     gives the key a fresh derivation gives, each time (the memo may
//     make keying faster, never different).
// Any other refusal by the key, and any compile failure but a compile
// error, aborts: the generator makes neither.
//
// KCACHE_FUZZ_GRAPH_TRACE=1 prints each case, its mutation and gcc's
// errors; KCACHE_FUZZ_GRAPH_STATS=1 prints at exit how many inputs reached
// each step.
#include <kcache/compiler.h>
#include <unistd.h>

#include <algorithm>
#include <array>
#include <chrono>
#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <filesystem>
#include <iterator>
#include <map>
#include <set>
#include <string>
#include <string_view>
#include <thread>
#include <vector>

#include "fuzz_support.h"
#include "inputs/file_digests.h"
#include "key/key_builder.h"

namespace kcache::fuzz {
namespace {

namespace fs = std::filesystem;

// The input as a stream of choices.
class Choices {
 public:
  Choices(const std::uint8_t* data, std::size_t size) : data_(data), size_(size) {}

  // A number in [0, n); 0 once the input is used up.
  unsigned pick(std::size_t n) {
    if (n <= 1 || pos_ >= size_) return 0;
    return data_[pos_++] % n;
  }

  template <std::size_t N>
  std::string pick_of(const std::array<std::string_view, N>& from) {
    return std::string(from[pick(N)]);
  }

 private:
  const std::uint8_t* data_;
  std::size_t size_;
  std::size_t pos_ = 0;
};

constexpr std::array<std::string_view, 5> kFolders = {".", "d", "e", "s", "s/t"};
constexpr std::array<std::string_view, 5> kFileNames = {"a.h", "b.h", "c.h", "m.h", "t/a.h"};
// What a directive or -include names: the file names, and paths through
// a folder (d/a.h is also an in-memory header's name).
constexpr std::array<std::string_view, 8> kIncludeNames = {"a.h",   "b.h",   "c.h",   "m.h",
                                                           "t/a.h", "t/b.h", "d/a.h", "s/t/b.h"};
// d/a.h and d/b.h are also where headers on disk sit, as -I d names them.
constexpr std::array<std::string_view, 5> kMemoryNames = {"m.h", "a.h", "t/a.h", "d/a.h", "d/b.h"};
constexpr std::array<std::string_view, 2> kMacros = {"HA", "HB"};

// One generated request and the files it may read.
struct Case {
  std::string root;                         // the scratch folder, canonical
  std::map<std::string, std::string> disk;  // path under root -> content
  KernelRequest request;
  int contents = 0;  // contents made so far: each gets its own marker
};

// Where a header on disk may sit, relative to the scratch folder.
std::string file_path(Choices& in) {
  const std::string folder = in.pick_of(kFolders);
  const std::string name = in.pick_of(kFileNames);
  return folder == "." ? name : folder + "/" + name;
}

// A folder as an option names it.
std::string folder_spelling(Choices& in, const std::string& root) {
  const std::string folder = in.pick_of(kFolders);
  switch (in.pick(3)) {
    case 0:
      return folder;
    case 1:
      return folder == "." ? "./" : "./" + folder;
    default:
      return folder == "." ? root : root + "/" + folder;
  }
}

// `#if condition` around `lines`.
std::string guarded(const std::string& condition, const std::string& lines) {
  return "#if " + condition + "\n" + lines + "#endif\n";
}

// One directive line (or a few), mostly behind the __has_include test of
// its own name, so that most graphs compile: an #include that finds
// nothing stops gcc.
std::string directive(Choices& in, const Case& c, const std::string& marker) {
  const unsigned form = in.pick(18);
  const bool guard = in.pick(16) != 15;
  const std::string n = in.pick_of(kIncludeNames);
  const std::string quoted = "\"" + n + "\"";
  const std::string angled = "<" + n + ">";
  auto maybe_guarded = [&](const std::string& test, const std::string& name,
                           const std::string& line) {
    return guard ? guarded(test + "(" + name + ")", line) : line;
  };
  switch (form) {
    case 0:
      return maybe_guarded("__has_include", quoted, "#include " + quoted + "\n");
    case 1:
      return maybe_guarded("__has_include", angled, "#include " + angled + "\n");
    case 2: {
      const std::string absolute = "\"" + c.root + "/" + file_path(in) + "\"";
      return maybe_guarded("__has_include", absolute, "#include " + absolute + "\n");
    }
    case 3:
      return maybe_guarded("__has_include", quoted, "/* c */ #include " + quoted + "\n");
    case 4:
      return maybe_guarded("__has_include", quoted, "#inc\\\nlude " + quoted + "\n");
    case 5:
      return maybe_guarded("__has_include", angled, "%:include " + angled + "\n");
    case 6:
      return maybe_guarded("__has_include_next", angled, "#include_next " + angled + "\n");
    case 7:
      return maybe_guarded("__has_include_next", quoted, "#include_next " + quoted + "\n");
    case 8:
      return maybe_guarded("__has_include", quoted, "#import " + quoted + "\n");
    case 9:
      return guarded("__has_include(" + quoted + ")", "int h_" + marker + ";\n");
    case 10:
      return guarded("__has_include(" + angled + ")", "int h_" + marker + ";\n");
    case 11: {
      const std::string macro = in.pick_of(kMacros);
      const std::string use = "#include " + macro + "\n";
      return "#define " + macro + " " + quoted + "\n" +
             (guard ? guarded("__has_include(" + macro + ")", use) : use);
    }
    case 12:
      return "#define " + in.pick_of(kMacros) + " " + angled + "\n";
    case 13: {
      const std::string macro = in.pick_of(kMacros);
      const std::string use = "#include " + macro + "\n";
      return guard ? guarded("defined " + macro, guarded("__has_include(" + macro + ")", use))
                   : use;
    }
    case 14:
      return guarded("0", "#include " + quoted + "\n");
    case 16:  // CCCL's wrapper, lone, so that definitions and calls meet across files
      return "#define WRAP_HAS(_X) " +
             std::string(in.pick(2) == 0 ? "__has_include(_X)\n" : "__has_include_next(_X)\n");
    case 17:
      return "#ifdef WRAP_HAS\n" +
             guarded("WRAP_HAS(" + (in.pick(2) == 0 ? quoted : angled) + ")",
                     "int w_" + marker + ";\n") +
             "#endif\n";
    default:
      return maybe_guarded("__has_include", quoted, "#include " + quoted + " // c\n");
  }
}

// A header's or the source's text: directives, then a line unique to it.
std::string text_of(Choices& in, Case& c, bool header) {
  const std::string marker = std::to_string(c.contents++);
  // Without it, a header reached along many paths is read once per path:
  // exponentially many times.
  std::string text = header ? "#pragma once\n" : "";
  const unsigned lines = 1 + in.pick(4);
  for (unsigned i = 0; i < lines; ++i) text += directive(in, c, marker + "_" + std::to_string(i));
  return text + "int v_" + marker + ";\n";
}

void write_header(Case& c, const std::string& relative, const std::string& content) {
  const bool plain =
      !relative.empty() && !relative.starts_with('/') && relative.find("..") == std::string::npos &&
      relative.find_first_not_of("abcdefghijklmnopqrstuvwxyz./") == std::string::npos;
  KCACHE_FUZZ_CHECK(plain, "a header name outside the scratch folder: " + relative);
  const fs::path path = fs::path(c.root) / relative;
  fs::create_directories(path.parent_path());
  write_scratch_file(path.string(), as_bytes(content));
  c.disk[relative] = content;
}

Case generate(Choices& in, const std::string& root) {
  Case c;
  c.root = root;
  const unsigned files = 1 + in.pick(8);
  for (unsigned i = 0; i < files; ++i) {
    const std::string path = file_path(in);
    write_header(c, path, text_of(in, c, /*header=*/true));
  }
  std::string options;
  const unsigned option_count = (in.pick(7) + 1) % 7;  // one when the input has ended
  for (unsigned i = 0; i < option_count; ++i) {
    static constexpr std::array<std::string_view, 7> kOptions = {
        "-I", "-iquote", "-isystem", "-idirafter", "-include", "-imacros", "-D"};
    const unsigned option = in.pick(kOptions.size());
    std::string value;
    bool joined = false;
    if (option == 6) {
      // A header name for `#include HA`, quoted for the option splitter.
      // (One choice per statement: the operands of + are unsequenced.)
      const std::string macro = in.pick_of(kMacros);
      const bool angled = in.pick(2) != 0;
      const std::string n = in.pick_of(kIncludeNames);
      value = "'" + macro + "=" + (angled ? "<" + n + ">" : "\"" + n + "\"") + "'";
      joined = true;
    } else if (option < 4) {
      value = folder_spelling(in, root);
      joined = in.pick(2) == 0;
    } else if (!c.disk.empty() && in.pick(8) != 7) {
      // Mostly a file that is there (from the working folder), since one
      // that is not stops gcc; -include takes its value separate.
      value = std::next(c.disk.begin(), in.pick(c.disk.size()))->first;
    } else {
      value = in.pick_of(kIncludeNames);
    }
    if (!options.empty()) options += ' ';
    options += std::string(kOptions[option]) + (joined ? "" : " ") + value;
  }
  c.request.options = options;
  const unsigned dirs = in.pick(3);
  for (unsigned i = 0; i < dirs; ++i) c.request.include_dirs.push_back(folder_spelling(in, root));
  c.request.source = text_of(in, c, /*header=*/false);
  const unsigned memory = in.pick(4);
  std::set<std::string> names;
  for (unsigned i = 0; i < memory; ++i) {
    const std::string name = in.pick_of(kMemoryNames);
    if (!names.insert(name).second) continue;
    c.request.headers.push_back({name, text_of(in, c, /*header=*/true)});
  }
  return c;
}

// Applies one change and says which.
std::string mutate(Choices& in, Case& c) {
  auto& memory = c.request.headers;
  switch (in.pick(6)) {
    case 0:
      if (!c.disk.empty()) {
        const std::string path = std::next(c.disk.begin(), in.pick(c.disk.size()))->first;
        write_header(c, path, text_of(in, c, /*header=*/true));
        return "edit " + path;
      }
      [[fallthrough]];
    case 1: {
      const std::string path = file_path(in);
      const bool existed = c.disk.contains(path);
      write_header(c, path, text_of(in, c, /*header=*/true));
      return (existed ? "rewrite " : "create ") + path;
    }
    case 2:
      if (!c.disk.empty()) {
        const std::string path = std::next(c.disk.begin(), in.pick(c.disk.size()))->first;
        fs::remove(fs::path(c.root) / path);
        c.disk.erase(path);
        return "delete " + path;
      }
      [[fallthrough]];
    case 3:
      if (!memory.empty()) {
        Header& header = memory[in.pick(memory.size())];
        header.content = text_of(in, c, /*header=*/true);
        return "edit memory:" + header.name;
      }
      [[fallthrough]];
    case 4: {
      std::vector<std::string> absent;
      for (std::string_view name : kMemoryNames) {
        if (std::none_of(memory.begin(), memory.end(),
                         [&](const Header& header) { return header.name == name; })) {
          absent.emplace_back(name);
        }
      }
      const std::string name =
          absent.empty() ? memory.front().name : absent[in.pick(absent.size())];
      if (!absent.empty()) memory.push_back({name, ""});
      for (auto& header : memory) {
        if (header.name == name) header.content = text_of(in, c, /*header=*/true);
      }
      return (absent.empty() ? "edit memory:" : "add memory:") + name;
    }
    default:
      if (!memory.empty()) {
        const std::size_t index = in.pick(memory.size());
        const std::string name = memory[index].name;
        memory.erase(memory.begin() + static_cast<std::ptrdiff_t>(index));
        return "remove memory:" + name;
      }
      return "no in-memory header to remove";
  }
}

std::string replace_all(std::string text, const std::string& from, const std::string& to) {
  for (std::size_t pos = text.find(from); pos != std::string::npos;
       pos = text.find(from, pos + to.size())) {
    text.replace(pos, from.size(), to);
  }
  return text;
}

// The case in words, the scratch folder written $ROOT.
std::string describe(const Case& c) {
  std::string text = "options: " + c.request.options + "\ninclude_dirs:";
  for (const auto& dir : c.request.include_dirs) text += " " + dir;
  text += "\n--- main source\n" + c.request.source;
  for (const auto& header : c.request.headers) {
    text += "--- memory:" + header.name + "\n" + header.content;
  }
  for (const auto& [path, content] : c.disk) text += "--- " + path + "\n" + content;
  return replace_all(text, c.root, "$ROOT");
}

Compiler& gcc() {
  static const std::unique_ptr<Compiler> compiler = [] {
    CompilerConfig config;
    config.backend = "command";
    config.command = "gcc -E -P -x c {in} -o {out}";
    config.timeout = std::chrono::seconds(20);
    config.facts_dir = "-";  // nothing written to the user's cache
    auto made = make_compiler(config);
    KCACHE_FUZZ_CHECK(made.is_ok(), "the command backend: " + made.status().to_string());
    KCACHE_FUZZ_CHECK((*made)->inputs().dialect == "gcc", (*made)->inputs().dialect);
    return std::move(*made);
  }();
  return *compiler;
}

const Target& target() {
  static const Target resolved = [] {
    auto target = gcc().resolve_target(Target{});
    KCACHE_FUZZ_CHECK(target.is_ok(), target.status().to_string());
    return *target;
  }();
  return resolved;
}

Result<KeyMaterial> key_of(const Case& c) {
  return build_key_material(c.request, gcc().identity(), gcc().inputs(), target(), Env::posix());
}

// The same key through a memo, as a cache derives it (digests and whole
// scans reused while the disk and the change watch say nothing moved).
Result<std::string> memo_key_of(const Case& c, KeyMemo& memo) {
  auto text =
      build_key_text(c.request, gcc().identity(), gcc().inputs(), target(), Env::posix(), &memo);
  if (!text) return text.status();
  // A memo may keep the key with the text: it must be the text's digest.
  auto material = KeyMaterial::parse(text->joined());
  KCACHE_FUZZ_CHECK(material.is_ok() && material->digest() == text->key(),
                    "a memo gave a key that is not its text's digest");
  return text->joined();
}

// A scan that read a file changed within the timestamps' granularity is
// not kept (ccache's guard, changed_recently): wait until every file on
// disk is older than that, a condition on the clock, polled.
void let_files_settle(const Case& c) {
  for (const auto& [relative, content] : c.disk) {
    for (;;) {
      auto stamp = Env::posix().stamp(c.root + "/" + relative);
      if (!stamp || !changed_recently(*stamp)) break;
      std::this_thread::sleep_for(std::chrono::milliseconds(1));
    }
  }
}

struct Outcome {
  std::string output;  // gcc's output, or "error"
  std::vector<std::string> files_read;
};

Outcome compile(const Case& c) {
  auto compiled = gcc().compile(c.request, target());
  if (!compiled) {
    KCACHE_FUZZ_CHECK(compiled.status().code() == StatusCode::kCompileError,
                      compiled.status().to_string() + "\n" + describe(c));
    if (std::getenv("KCACHE_FUZZ_GRAPH_TRACE") != nullptr) {
      std::fprintf(stderr, "==== gcc failed: %s\n", compiled.status().details().c_str());
    }
    return {"error", {}};
  }
  return {std::string(compiled->binary.begin(), compiled->binary.end()),
          std::move(compiled->files_read)};
}

// Check 2: what gcc read under the scratch folder is keyed.
void check_reads_are_keyed(const Case& c, const KeyMaterial& key, const Outcome& outcome) {
  std::set<std::string> keyed;
  for (const auto& field : key.fields()) {
    if (field.name != "header") continue;
    // "<name> <location> <digest>"; no generated name holds a space.
    const std::size_t first = field.value.find(' ');
    const std::size_t last = field.value.rfind(' ');
    const std::string name = field.value.substr(0, first);
    const std::string location = field.value.substr(first + 1, last - first - 1);
    if (location.starts_with("memory:")) continue;
    const std::string path =
        location.starts_with("dir:") ? location.substr(4) + "/" + name : location;
    std::error_code error;
    const fs::path canonical = fs::weakly_canonical(path, error);
    if (!error) keyed.insert(canonical.string());
  }
  for (const auto& file : outcome.files_read) {
    std::error_code error;
    const std::string canonical = fs::weakly_canonical(file, error).string();
    if (error || !canonical.starts_with(c.root + "/")) continue;  // stdc-predef.h and the like
    KCACHE_FUZZ_CHECK(keyed.contains(canonical),
                      "gcc read " + replace_all(canonical, c.root, "$ROOT") +
                          ", which the key does not hold\n" + describe(c) + "==== key material\n" +
                          replace_all(key.serialize(), c.root, "$ROOT"));
  }
}

// How many inputs reached each step (KCACHE_FUZZ_GRAPH_STATS=1).
struct Stats {
  long inputs = 0, unkeyable = 0, compiled = 0, unkeyable_after = 0, same_key = 0;
  ~Stats() {
    if (std::getenv("KCACHE_FUZZ_GRAPH_STATS") == nullptr) return;
    std::fprintf(stderr,
                 "fuzz_include_graph: %ld inputs, %ld unkeyable, %ld compiled (the others were "
                 "compile errors), %ld unkeyable after the mutation, %ld mutations left the key "
                 "as it was (gcc ran again)\n",
                 inputs, unkeyable, compiled, unkeyable_after, same_key);
  }
};
Stats stats;

std::string& home() {
  static std::string cwd = fs::current_path().string();
  return cwd;
}

// The scratch folder of one input: made empty and entered (gcc runs
// there, and relative names are read from there); left and emptied after.
class Scratch {
 public:
  Scratch() {
    home();
    static const std::string root =
        fs::canonical(private_dir("kcache-fuzz-graph-")).string() + "/graph";
    root_ = root;
    fs::remove_all(root_);
    fs::create_directory(root_);
    KCACHE_FUZZ_CHECK(::chdir(root_.c_str()) == 0, "cannot enter " + root_);
  }
  ~Scratch() {
    KCACHE_FUZZ_CHECK(::chdir(home().c_str()) == 0, "cannot go back to " + home());
    std::error_code ignored;
    fs::remove_all(root_, ignored);
  }
  Scratch(const Scratch&) = delete;
  Scratch& operator=(const Scratch&) = delete;
  [[nodiscard]] const std::string& root() const { return root_; }

 private:
  std::string root_;
};

void run(Choices& in) {
  const Scratch scratch;
  Case c = generate(in, scratch.root());
  ++stats.inputs;
  const bool trace = std::getenv("KCACHE_FUZZ_GRAPH_TRACE") != nullptr;
  if (trace) std::fprintf(stderr, "==== case\n%s", describe(c).c_str());
  auto first = key_of(c);
  if (!first) {
    KCACHE_FUZZ_CHECK(first.status().code() == StatusCode::kNotSupported,
                      first.status().to_string() + "\n" + describe(c));
    ++stats.unkeyable;
    return;
  }
  auto again = key_of(c);
  KCACHE_FUZZ_CHECK(again.is_ok() && again->serialize() == first->serialize(),
                    "keying twice gave two keys\n" + describe(c));
  const Outcome before = compile(c);
  if (before.output != "error") ++stats.compiled;
  check_reads_are_keyed(c, *first, before);

  // Check 4: a memo keys alike. Three derivations take its scan from
  // stat checks to the change watch's fast path (once no file is too new
  // for a scan to be kept).
  let_files_settle(c);
  KeyMemo memo;
  for (int i = 0; i < 3; ++i) {
    auto memoized = memo_key_of(c, memo);
    KCACHE_FUZZ_CHECK(memoized.is_ok() && *memoized == first->serialize(),
                      "a memo gave another key\n" + describe(c));
  }

  const std::string before_text = describe(c);
  const std::string change = mutate(in, c);
  if (trace) std::fprintf(stderr, "==== mutation: %s\n", change.c_str());
  auto second = key_of(c);
  auto memoized = memo_key_of(c, memo);
  if (!second) {
    KCACHE_FUZZ_CHECK(second.status().code() == StatusCode::kNotSupported,
                      second.status().to_string() + "\n" + describe(c));
    KCACHE_FUZZ_CHECK(
        !memoized && memoized.status().code() == second.status().code(),
        "after: " + change + ", the memo keyed what a fresh scan refuses\n" + describe(c));
    ++stats.unkeyable_after;
    return;
  }
  KCACHE_FUZZ_CHECK(memoized.is_ok() && *memoized == second->serialize(),
                    "after: " + change + ", the memo gave the old key or another (stale)\n" +
                        describe(c) + "==== key material\n" +
                        replace_all(second->serialize(), c.root, "$ROOT"));
  // A new key cannot serve a stale binary: gcc runs again only when the
  // key stayed.
  if (second->serialize() != first->serialize()) return;
  ++stats.same_key;
  const Outcome after = compile(c);
  check_reads_are_keyed(c, *second, after);
  KCACHE_FUZZ_CHECK(after.output == before.output,
                    "the key stayed and gcc's output changed (a stale binary) after: " + change +
                        "\n==== before\n" + before_text + "==== output before\n" + before.output +
                        "==== output after\n" + after.output + "==== key material\n" +
                        replace_all(first->serialize(), c.root, "$ROOT"));
}

}  // namespace
}  // namespace kcache::fuzz

// The working folder changes while an input runs, so a crash input would
// be written into the scratch folder: artifacts go to the folder the fuzzer
// was started in unless a prefix is given (a relative one is made absolute).
extern "C" int LLVMFuzzerInitialize(int* argc, char*** argv) {
  static std::vector<std::string> owned;
  static std::vector<char*> args;
  const std::string cwd = kcache::fuzz::home();
  bool has_prefix = false;
  owned.reserve(static_cast<std::size_t>(*argc) + 1);
  for (int i = 0; i < *argc; ++i) {
    std::string arg = (*argv)[i];
    for (std::string_view flag : {"-artifact_prefix=", "-exact_artifact_path="}) {
      if (!arg.starts_with(flag)) continue;
      has_prefix = true;
      if (arg.size() > flag.size() && arg[flag.size()] != '/') arg.insert(flag.size(), cwd + "/");
    }
    owned.push_back(std::move(arg));
  }
  if (!has_prefix) owned.push_back("-artifact_prefix=" + cwd + "/");
  for (auto& arg : owned) args.push_back(arg.data());
  args.push_back(nullptr);
  *argc = static_cast<int>(owned.size());
  *argv = args.data();
  return 0;
}

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  kcache::fuzz::Choices in(data, size);
  kcache::fuzz::run(in);
  return 0;
}
