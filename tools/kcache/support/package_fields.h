// What the tool reads out of a package's description (PackageInfo, from
// kcache/package.h): the database it belongs to, the target features its
// kernels were compiled for, and the JSON `info` and `verify` print.
#pragma once

#include <kcache/package.h>

#include <nlohmann/json.hpp>

#include <string>
#include <vector>

namespace kcache::tool {

// The database a package belongs to, its metadata "db" (the target it was
// packed for: `sm_90_132`, or `sm_90` for any sm_90); empty when it names
// none.
std::string db_of(const PackageInfo& info);

// The target features its kernels were compiled for (the db names the
// arch alone): "xnack-" for gfx90a:xnack-.
std::vector<std::string> features_of(const PackageInfo& info);

// A package as `kcache info --json` and `verify --json` print it.
nlohmann::json package_json(const PackageInfo& info);

}  // namespace kcache::tool
