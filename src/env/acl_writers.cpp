#include "env/acl_writers.h"

#include <acl/libacl.h>
#include <sys/acl.h>

#include <cerrno>
#include <cstring>
#include <memory>

namespace kcache {
namespace {

struct AclFree {
  void operator()(void* p) const { ::acl_free(p); }
};
using AclHandle = std::unique_ptr<std::remove_pointer_t<acl_t>, AclFree>;

bool may_write(acl_entry_t entry) {
  acl_permset_t permset = nullptr;
  return ::acl_get_permset(entry, &permset) == 0 && ::acl_get_perm(permset, ACL_WRITE) == 1;
}

}  // namespace

Result<AclWriters> read_acl_writers(const std::string& path) {
  AclHandle acl(::acl_get_file(path.c_str(), ACL_TYPE_ACCESS));
  if (!acl) {
    const int err = errno;
    if (err == ENOTSUP || err == ENOSYS) return AclWriters{};
    const std::string message = "cannot read the ACL of " + path + ": " + std::strerror(err);
    if (err == ENOENT || err == ENOTDIR) return Status::not_found(message);
    return Status::io_error(message);
  }
  // The mask bounds every named entry (and the owning group's); without
  // one there are no named entries.
  bool mask_writes = true;
  AclWriters named;
  acl_entry_t entry = nullptr;
  for (int which = ACL_FIRST_ENTRY; ::acl_get_entry(acl.get(), which, &entry) == 1;
       which = ACL_NEXT_ENTRY) {
    acl_tag_t tag = ACL_UNDEFINED_TAG;
    if (::acl_get_tag_type(entry, &tag) != 0) continue;
    if (tag == ACL_MASK) mask_writes = may_write(entry);
    if ((tag != ACL_USER && tag != ACL_GROUP) || !may_write(entry)) continue;
    std::unique_ptr<void, AclFree> qualifier(::acl_get_qualifier(entry));
    if (!qualifier) continue;
    if (tag == ACL_USER) named.users.push_back(*static_cast<uid_t*>(qualifier.get()));
    if (tag == ACL_GROUP) named.groups.push_back(*static_cast<gid_t*>(qualifier.get()));
  }
  if (!mask_writes) return AclWriters{};
  return named;
}

}  // namespace kcache
