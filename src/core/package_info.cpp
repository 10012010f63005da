// read_package_info (kcache/cache.h): what `kcache info PKG` shows.
#include <kcache/cache.h>

#include "format/kdb_file.h"
#include "store/trusted_path.h"

namespace kcache {

Result<PackageInfo> read_package_info(const std::string& path) {
  const Env& env = Env::posix();
  PackageInfo info;
  info.path = path;
  info.untrusted = untrusted_reason(path, env).value_or("");
  auto kdb = KdbReader::open(path, env);
  if (!kdb) return kdb.status();
  info.format_version = kKdbFormatVersion;  // open refuses any other
  info.kernels = (*kdb)->slots().size();
  info.metadata = (*kdb)->metadata();
  return info;
}

}  // namespace kcache
