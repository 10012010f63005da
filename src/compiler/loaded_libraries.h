// The shared libraries loaded in this process (dl_iterate_phdr): a vendor
// runtime's build is the files it loaded, not its version string.
#pragma once

#include <string>
#include <vector>

namespace kcache {

// Their canonical paths, sorted, without the program itself.
std::vector<std::string> loaded_libraries();

}  // namespace kcache
