// The last line of kcache pack's summary: where its time went.
#pragma once

#include <chrono>
#include <string>

namespace kcache::tool {

// Where a pack's time went, in seconds: the phases of its wall time, and
// the jobs' time by what it went to (PackTally).
struct PackTimes {
  double total = 0;
  double before = 0;       // reading the manifest, checking, starting
  double jobs = 0;         // from the jobs' start to the last outcome
  double first_done = -1;  // from the jobs' start to the first kernel compiled; -1: none
  double writing = 0;      // the package
  unsigned job_count = 0;
  double compiling = 0;  // the jobs' time on lines they compiled (or failed to)
  double finding = 0;    // on lines found already built or repeating another
};
// Its last line: "took T s: B s before compiling, J s in N jobs (their
// time: C s compiling, F s on lines already built or repeating another;
// the first kernel done after X s), W s writing the package". The jobs'
// time is said apart from the wall time, and not all called compiling:
// lines found to repeat a kernel (keyed, and waiting for its compile) were.
std::string time_account(const PackTimes& times);

// Seconds since `from`.
inline double seconds_since(std::chrono::steady_clock::time_point from) {
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - from).count();
}

}  // namespace kcache::tool
