// What kcache pack says about a manifest's lines: those that failed, those
// that did not parse, and those recorded in a folder that is not here.
#pragma once

#include <cstddef>
#include <string>
#include <string_view>
#include <vector>

#include "manifest_lines.h"

namespace kcache::tool {

// Lines that failed alike (one message: a target the compiler refuses, a
// work folder that keeps nothing), said once at the end: the lines (the
// first ten), the reason, then the compiler's log indented below it, its
// first 30 lines.
void report_failed(const std::vector<std::size_t>& lines, std::string_view failure);

// The lines that did not parse, the first 20 of them (a file that is not
// a manifest would print one per line).
void report_skipped(const std::vector<std::string>& problems);

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

// Lines recorded in a folder that is not here (packed on another machine)
// are compiled from the pack's own: said once per folder, the first few.
void note_folders_not_here(const std::vector<Line>& lines);

}  // namespace kcache::tool
