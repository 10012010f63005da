#include "pack/time_account.h"

#include <cstdio>

namespace kcache::tool {

std::string time_account(const PackTimes& t) {
  char first[64] = "none compiled";
  if (t.first_done >= 0) {
    std::snprintf(first, sizeof first, "the first kernel done after %.2f s", t.first_done);
  }
  char took[320];
  std::snprintf(took, sizeof took,
                "took %.2f s: %.2f s before compiling, %.2f s in %u %s (their time: %.2f s "
                "compiling, %.2f s on lines already built or repeating another; %s), %.2f s "
                "writing the package",
                t.total, t.before, t.jobs, t.job_count, t.job_count == 1 ? "job" : "jobs",
                t.compiling, t.finding, first, t.writing);
  return took;
}

}  // namespace kcache::tool
