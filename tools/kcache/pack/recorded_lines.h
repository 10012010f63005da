// The lines of a kernel manifest (KCACHE_RECORD's, docs/formats.md §4) as
// kcache pack reads them: each a request and what it was recorded with.
#pragma once

#include <kcache/cache.h>

#include <cstddef>
#include <map>
#include <string>
#include <string_view>
#include <vector>

namespace kcache::tool {

struct Line {
  std::size_t number = 0;  // in the manifest, from 1
  std::string backend;
  CompilerIdentity recorded;     // the compiler the line was recorded with
  std::string recorded_library;  // the runtime library it compiled through, if recorded
  std::string recorded_key;      // hex
  std::string recorded_target;   // Target::to_string() of the recorded target
  std::string cwd;               // the folder the program ran in, when recorded
  KernelRequest request;
};

// The request of one manifest line, or why it is not one (kInvalidArgument
// naming the line).
Result<Line> parse_line(const std::string& text, std::size_t number);

// A manifest's lines to pack, in order.
struct RecordedLines {
  std::vector<Line> lines;            // each kernel once, its request's target set
  std::vector<std::string> problems;  // lines that do not parse, each naming its number
  std::size_t other_backends = 0;     // lines of another backend, left out
  // Lines whose backend takes no such target (an AMD arch for nvrtc): not
  // for this package, so left out and said, not failed; by backend, with
  // why.
  std::map<std::string, std::pair<std::size_t, std::string>> misfits;
  std::size_t repeats = 0;  // lines asking for a kernel an earlier line asks for
};

// The lines of `manifest` (blank lines passed over), of `backend` alone
// when it is not empty, for `target` (a line whose backend can take no
// target of that name, an AMD arch for nvrtc, is a misfit). A kernel the manifest names twice
// (manifests joined with `cat`, or recorded for two targets and packed for
// one: same_kernel) is kept once and its repeats counted.
RecordedLines read_lines(std::string_view manifest, const std::string& backend,
                         const Target& target);

// Whether two lines ask for one kernel once packed for one target: the
// same backend, recorded compiler and request (source and its name,
// options, kernel names, headers, include folders), whatever target each
// was recorded for.
bool same_kernel(const Line& a, const Line& b);

// A hash of what same_kernel compares.
std::size_t kernel_hash(const Line& line);

// The compiler config a line is compiled with: the command line's, and
// what the line recorded where the command line says nothing: for nvrtc
// and hip the library the program compiled through, when that file is
// here; for the command backend what its recorded identity says
// ("<id> | <template> | <input name>", and "id:<compiler id>" as
// version). So the keys come out as recorded.
CompilerConfig config_for(const Line& line, const CompilerConfig& given);

// A name for a config: lines whose configs have one name share a compiler.
std::string config_name(const CompilerConfig& config);

}  // namespace kcache::tool
