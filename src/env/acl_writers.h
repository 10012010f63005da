// Who a file's POSIX access ACL lets write it besides its owner, through
// libacl (Env::acl_writers of the real file system).
#pragma once

#include <string>

#include "env/env.h"

namespace kcache {

// `path`'s named ACL entries that may write it under the ACL's mask (links
// followed); none without an extended ACL, or on a file system that keeps
// none. kNotFound when `path` does not exist.
Result<AclWriters> read_acl_writers(const std::string& path);

}  // namespace kcache
