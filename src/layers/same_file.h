// Whether two paths name one file (device and inode): the loader maps a
// file once however it is named (a link, the toolkit's versioned folder),
// so the drop-in layers compare libraries the same way.
#pragma once

#include <sys/stat.h>

namespace kcache::layer {

inline bool same_file(const char* a, const char* b) {
  struct stat first {};
  struct stat second {};
  return a != nullptr && b != nullptr && ::stat(a, &first) == 0 && ::stat(b, &second) == 0 &&
         first.st_dev == second.st_dev && first.st_ino == second.st_ino;
}

}  // namespace kcache::layer
