// What became of a pack's lines, counted as their outcomes come in (from
// workers, in any order): what the package will hold, the failures with
// the lines that met each, and the lines that came to a key already packed.
#pragma once

#include <kcache/cache.h>

#include <cstddef>
#include <map>
#include <set>
#include <string>
#include <utility>
#include <vector>

#include "pack/recorded_lines.h"
#include "pack/workers.h"

namespace kcache::tool {

class PackTally {
 public:
  // `repeats`: the lines found repeating an earlier one before any compile.
  explicit PackTally(std::size_t repeats_read) : repeats(repeats_read) {}

  // Counts what became of `line`; returns what the progress says of it.
  std::string record(const Outcome& outcome, const Line& line);

  // Each failure's message (its log included) and the numbers of the lines
  // that met it, in the order they came in.
  std::vector<std::pair<std::string, std::vector<std::size_t>>> failed;
  std::size_t failures = 0;
  std::size_t no_compiler = 0;   // of the failures: the line's compiler could not be made here
  std::vector<CacheKey> packed;  // what the package holds: this manifest's kernels only
  std::set<std::string> dbs;     // the databases the packed kernels went to
  std::size_t compiled = 0;
  std::size_t reused = 0;      // already in the work folder
  std::size_t keyed_anew = 0;  // recorded for this target, yet another key now
  std::size_t repeats = 0;     // lines asking for a kernel an earlier line asked for
  // The jobs' time (Outcome::seconds), by what became of the line: compiled
  // (or failed to), or found already built or repeating another (keyed,
  // looked up, perhaps waited for while another job compiled it). A line
  // whose compiler could not be made here is in neither.
  double compiling_seconds = 0;
  double finding_seconds = 0;

 private:
  std::map<std::string, std::size_t> line_of_key_;  // the first line packed with each key
};

}  // namespace kcache::tool
