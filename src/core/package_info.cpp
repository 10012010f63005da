// read_package_info (kcache/cache.h): what `kcache info PKG` shows.
#include <kcache/cache.h>

#include "format/entry.h"
#include "format/kdb_file.h"
#include "store/trusted_path.h"

namespace kcache {

Result<PackageInfo> read_package_info(const std::string& path, bool check_entries) {
  const Env& env = Env::posix();
  PackageInfo info;
  info.path = path;
  info.untrusted = untrusted_reason(path, env).value_or("");
  auto kdb = KdbReader::open(path, env);
  if (!kdb) return kdb.status();
  info.format_version = kKdbFormatVersion;  // open refuses any other
  info.kernels = (*kdb)->slots().size();
  info.metadata = (*kdb)->metadata();
  if (check_entries) {
    for (const auto& slot : (*kdb)->slots()) {
      auto bytes = (*kdb)->read(slot);
      if (!bytes) return bytes.status();
      if (!decode_entry(*bytes, &slot.key)) ++info.bad_entries;
    }
  }
  return info;
}

}  // namespace kcache
