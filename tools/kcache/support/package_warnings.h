// What kcache install, import and merge say of the packages they take in
// beside what they did: one others could have written, entries left out.
#pragma once

#include <kcache/package.h>

#include <cstdint>
#include <string>
#include <vector>

namespace kcache::tool {

// A package others could have written is installed or imported as asked
// (the user named it), but said: the copy is the user's (or root's) now,
// and the system tier would have refused the file where it lay. Under
// trusted keys the signature vouches for it instead.
void warn_if_others_could_write(const PackageInfo& info,
                                const std::vector<std::string>& trusted_keys);

// Says that `bad` damaged entries of `packages` (their paths, one text)
// were left out; returns 1.
int report_left_out(const std::string& packages, std::uint64_t bad);

}  // namespace kcache::tool
