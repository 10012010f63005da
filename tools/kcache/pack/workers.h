// kcache pack's jobs as processes: this program run again as `kcache pack
// ... --worker`, one per job, each with its own compilers, over the same
// work folder (the user tier is safe with many processes). Threads do not
// scale: PoCL and comgr hold process-wide locks, and NVRTC kept 6.5 of 16
// cores busy in one process against 10 in 16 (docs/benchmarks.md).
//
// The parent hands each worker the index of a line on its stdin, one per
// line, and a worker answers each with one outcome line on its stdout; the
// next index goes to whichever worker answered (one line in hand at a time,
// so the last lines go to whichever workers are free). A worker ends at the
// end of its stdin.
//
// A worker and the compilers it starts are a process group of their own,
// and end, all of them at once, when the pack does however it ends (a
// signal to it alone, SIGKILL included): a compile left running could take
// minutes, beside a pack run again to go on. A terminal's Ctrl-C reaches
// the pack, which then ends.
#pragma once

#include <sys/types.h>

#include <cstddef>
#include <functional>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace kcache::tool {

// What became of one line.
struct Outcome {
  // kNoCompiler: failed because the line's compiler could not be made
  // here (its runtime missing: no NVRTC, no OpenCL platform).
  enum class Kind { kCompiled, kReused, kFailed, kNoCompiler };
  std::size_t index = 0;  // into the pack's lines
  Kind kind = Kind::kFailed;
  std::string db;
  std::string key_hex;
  bool keyed_anew = false;  // recorded for this target, yet another key now
  std::string message;      // why it failed
  // How long its job had it, from the line handed out to its outcome read
  // (a job's first line: from the job's start). Set by run_workers.
  double seconds = 0;
};

// One line of text (tab-separated, no newline), and back.
std::string encode_outcome(const Outcome& outcome);
std::optional<Outcome> decode_outcome(std::string_view line);

// Runs `workers` processes of `arguments` (argv[0] is replaced by this
// program) over lines 0..count-1, calling `on_outcome` in this thread for
// each one reported. Lines no worker reported (it died, or could not be
// started) come back as failed outcomes saying why. A line whose worker
// died the first time is handed out again, and `on_retry` (when given)
// told which and why.
void run_workers(
    const std::vector<std::string>& arguments, unsigned workers, std::size_t count,
    const std::function<void(const Outcome&)>& on_outcome,
    const std::function<void(std::size_t index, const std::string& why)>& on_retry = nullptr);

// Called first in a worker, `parent` the pack that started it: when the
// pack ends, the worker's group (it and its compilers) is killed. A pack
// already gone ends it at once.
void end_with_parent(pid_t parent);

}  // namespace kcache::tool
