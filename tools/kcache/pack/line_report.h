// What kcache pack says about a manifest's lines: those that failed, those
// that did not parse, and those recorded in a folder that is not here.
#pragma once

#include <cstddef>
#include <string>
#include <string_view>
#include <vector>

#include "pack/recorded_lines.h"

namespace kcache::tool {

// Lines that failed alike (one message: a target the compiler refuses, a
// work folder that keeps nothing), said once at the end: the lines (the
// first ten), the reason, then the compiler's log indented below it, its
// first 30 lines.
void report_failed(const std::vector<std::size_t>& lines, std::string_view failure);

// The lines that did not parse, the first 20 of them (a file that is not
// a manifest would print one per line).
void report_skipped(const std::vector<std::string>& problems);

// Lines recorded in a folder that is not here (packed on another machine)
// are compiled from the pack's own: said once per folder, the first few.
void note_folders_not_here(const std::vector<Line>& lines);

}  // namespace kcache::tool
