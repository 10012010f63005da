// A database's drop-in folder read as the system tier reads it
// (kcache/package.h: DropInListing): its packages, and apart the things
// named as packages that are not regular files.
#pragma once

#include <kcache/package.h>

#include <string>

#include "env/env.h"

namespace kcache {

// kNotFound when `folder` is not there, or is not a folder; another error
// when it cannot be listed.
Result<DropInListing> list_drop_ins(const std::string& folder, const Env& env);

}  // namespace kcache
