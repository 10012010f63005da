// Where a compiler looks for a header, per dialect: the one model of the
// header search that both the key (include_scanner.h) and the compile use
// (docs/design.md §1.3 lists each dialect's order and how it was checked).
//
// A header name is looked up in an ordered list of places. A place is a
// folder on disk or the request's in-memory headers. The first place that
// holds the name is what the compiler reads, and the search stops there;
// a place whose use kcache is not sure of is "uncertain": what it holds is
// keyed too, and the search goes on. A toolkit folder (covered by the
// compiler's identity) ends the search without keying the file.
#pragma once

#include <kcache/key.h>

#include <optional>
#include <string>
#include <vector>

#include "env/env.h"
#include "inputs/options.h"

namespace kcache {

struct Place {
  enum class Kind { kDisk, kMemory };
  Kind kind = Kind::kDisk;
  // kDisk: the folder, as the compiler is given it ("." for the working
  // folder). kMemory: the virtual folder of the in-memory headers the name
  // is joined to ("" for their root).
  std::string dir;
  // kMemory: the include's text must equal a header's name as given
  // (NVRTC, hipRTC); otherwise names are joined and normalised like paths
  // (headers written to a folder: OpenCL, command).
  bool exact = false;
  bool certain = true;
  bool toolkit = false;
};

// Who wrote an #include: the main source, a header on disk (its path) or an
// in-memory header (its name).
struct Includer {
  enum class Kind { kMain, kDisk, kMemory };
  Kind kind = Kind::kMain;
  std::string path;
};

// What shapes one request's header search.
struct SearchInputs {
  Dialect dialect = Dialect::kGeneric;
  // Include folders and files from the options, in command-line order:
  // the backend's own leading options, then the request's.
  std::vector<PathOption> paths;
  // KernelRequest::include_dirs (given to the compiler as -I after the
  // options).
  std::vector<std::string> include_dirs;
  // After include_dirs: folders the compiler adds itself, from its
  // environment (CPATH) or trailing options (POCL_EXTRA_BUILD_FLAGS).
  std::vector<PathOption> trailing_paths;
  // Folders that ship with the compiler, searched last (before -idirafter).
  std::vector<std::string> toolkit_dirs;
  // System folders from the environment (C_INCLUDE_PATH, CPLUS_INCLUDE_PATH):
  // which one applies depends on the language, so both are uncertain.
  std::vector<std::string> env_system_dirs;
  bool no_source_include = false;
  // The main source's folder (nvrtc: that of its program name), searched
  // first for its quoted includes unless no_source_include.
  std::string source_folder = ".";
};

// The folder of a source named `name`: "." for a name without one.
std::string source_folder_of(const std::string& name);

class IncludeModel {
 public:
  // `env` (may be null) tells folders apart by inode: gcc and clang drop an
  // -I or -iquote folder that is also a system folder (-isystem,
  // -idirafter), which is then searched only as one.
  explicit IncludeModel(SearchInputs inputs, const Env* env = nullptr);

  // The places searched for `name` (quoted: "name"), written in `from`.
  // An absolute name is looked for as itself (and, for dialects that match
  // in-memory headers by name, among them first).
  [[nodiscard]] std::vector<Place> places(const std::string& name, bool quoted,
                                          const Includer& from) const;
  // The places searched for a forced include (-include, --pre-include,
  // -imacros): the working folder first, then the quoted search.
  [[nodiscard]] std::vector<Place> forced_places(const std::string& name) const;
  // Every place any include could reach (for a computed include whose name
  // kcache cannot know): each folder, the working folder where the dialect
  // searches it, and the in-memory headers.
  [[nodiscard]] std::vector<Place> every_place() const;
  // The forced includes and -imacros files, in order.
  [[nodiscard]] std::vector<std::string> forced_includes() const;

  [[nodiscard]] Dialect dialect() const { return inputs_.dialect; }

 private:
  void add_dirs(std::vector<Place>& out, OptionRole role) const;
  void add_angle_chain(std::vector<Place>& out) const;

  SearchInputs inputs_;
};

// "a/../b//c.h" -> "b/c.h"; a name that leaves its root ("../x.h") stays as
// it is, unnormalised.
std::string normal_relative(const std::string& path);

}  // namespace kcache
