// kcache pack's progress on stderr: one line rewritten on a terminal
// (count, rate, ETA), a line per kernel otherwise.
#pragma once

#include <unistd.h>

#include <chrono>
#include <cmath>
#include <cstdio>
#include <iostream>
#include <string>

#include "base/mutex.h"
#include "pack/recorded_lines.h"

namespace kcache::tool {

inline std::string duration_text(double seconds) {
  if (!std::isfinite(seconds) || seconds < 0) return "?";
  const long total = std::lround(seconds);
  char text[32];
  std::snprintf(text, sizeof text, "%ld:%02ld", total / 60, total % 60);
  return text;
}

// Progress on stderr: one line rewritten on a terminal, a line per kernel
// otherwise.
class Progress {
 public:
  explicit Progress(std::size_t total)
      : total_(total), tty_(::isatty(2) == 1), start_(std::chrono::steady_clock::now()) {
    // On a terminal, the count from the start: a first compile may take a
    // while.
    if (tty_ && total_ > 0) {
      std::cerr << "pack: 0/" << total_ << " kernels, ETA ?"
                << "\033[K" << std::flush;
    }
  }

  // A line of its own between progress lines (on a terminal the progress
  // line is cleared for it, and drawn again by the next done()).
  void say(const std::string& text) {
    MutexLock lock(mutex_);
    std::cerr << (tty_ ? "\r\033[K" : "") << text << "\n" << std::flush;
  }

  // `compiled`: the line was compiled, or failed to (not found in the work
  // folder): the rate and the ETA count those alone, so that a resumed
  // pack's kernels already there do not make it look fast.
  void done(const Line& line, const std::string& outcome, bool compiled) {
    MutexLock lock(mutex_);
    ++done_;
    if (compiled) ++compiled_;
    const double elapsed =
        std::chrono::duration<double>(std::chrono::steady_clock::now() - start_).count();
    const double rate = elapsed > 0 ? static_cast<double>(compiled_) / elapsed : 0;
    // Nothing left: no estimate to make (a resumed pack whose kernels were
    // all built showed "0.0/s, ETA ?" at its end).
    const double eta = done_ == total_ ? 0
                       : rate > 0      ? static_cast<double>(total_ - done_) / rate
                                       : -1;
    char head[96];
    std::snprintf(head, sizeof head, "pack: %zu/%zu kernels, %.1f/s, ETA %s", done_, total_, rate,
                  duration_text(eta).c_str());
    if (tty_) {
      std::cerr << "\r" << head << "\033[K" << std::flush;
      if (done_ == total_) std::cerr << "\n";
    } else {
      std::cerr << head << ": line " << line.number << " " << outcome << "\n";
    }
  }

 private:
  Mutex mutex_;
  const std::size_t total_;
  const bool tty_;
  const std::chrono::steady_clock::time_point start_;
  std::size_t done_ GUARDED_BY(mutex_) = 0;
  std::size_t compiled_ GUARDED_BY(mutex_) = 0;
};

}  // namespace kcache::tool
