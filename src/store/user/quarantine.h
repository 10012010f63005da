// quarantine/ of a user-tier folder: bad bytes copied aside and bad files
// moved aside, named <db>.<what>.<unix time>[.<n>].bad (<what>.<unix
// time>[.<n>].bad for a file of no database, as the stats file); nothing
// the tier finds bad is deleted silently.
#pragma once

#include <kcache/status.h>

#include <cstdint>
#include <span>
#include <string>

#include "env/env.h"

namespace kcache {

class Quarantine {
 public:
  // The quarantine of the tier folder `tier_dir`.
  Quarantine(Env& env, const std::string& tier_dir)
      : env_(env), folder_(tier_dir + "/quarantine") {}

  // Copies bad bytes of database `db` (`what`: a key's hex, say) there.
  Status keep_copy(const std::string& db, const std::string& what,
                   std::span<const std::uint8_t> bytes) const;
  // Moves `path` there (a link itself, never what it names); true when
  // moved. A file that cannot be moved is removed, so that it is not met
  // again. `db` may be empty: a file of no database.
  bool move_in(const std::string& db, const std::string& path) const;

 private:
  // The folder, made when missing; something else in its place (a link, a
  // file) is renamed aside first.
  [[nodiscard]] Status make_folder() const;
  // A name there for `what` of `db` that no file has yet.
  [[nodiscard]] std::string free_name(const std::string& db, const std::string& what) const;

  Env& env_;
  const std::string folder_;
};

}  // namespace kcache
