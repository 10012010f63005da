// kcache gc: what no one will use again. Other kcache versions' folders
// beside this version's (only those holding nothing but kcache's files,
// and the user's own), the entries of compilers none of whose entries was
// used for GcOptions::unused_for (a toolkit or driver since upgraded: its
// key never comes again), and quarantined files older than that.
#pragma once

#include <kcache/admin.h>

#include "env/env.h"
#include "store/tier.h"

namespace kcache {

Result<GcReport> collect_garbage(Tier& user, Env& env, const std::string& user_dir,
                                 const GcOptions& options);

}  // namespace kcache
