#include "store/system/drop_in_listing.h"

#include <algorithm>

namespace kcache {
namespace {

// Why what is at a drop-in's name is not a package file; empty when it is
// one.
std::string not_a_package_reason(FileType type) {
  switch (type) {
    case FileType::kRegular:
      return {};
    case FileType::kDirectory:
      return "a folder, not a package file";
    case FileType::kSymlink:
      // As the system tier says of a link in a package's place
      // (trusted_path.h: refusal_words).
      return "a symbolic link, which is not followed (put the file itself there, as kcache "
             "install does)";
    case FileType::kOther:
      break;
  }
  return "not a regular file (a FIFO, socket or device), so not a package file";
}

}  // namespace

Result<DropInListing> list_drop_ins(const std::string& folder, const Env& env) {
  auto entries = env.list_dir(folder);
  if (!entries) return entries.status();
  DropInListing listing;
  for (const auto& entry : *entries) {
    if (!is_drop_in_package(entry.name)) continue;
    // Looked at itself (lstat): a link is not taken for what it names.
    auto info = env.file_info(folder + "/" + entry.name);
    if (!info) {
      if (info.status().code() == StatusCode::kNotFound) continue;  // removed meanwhile
      listing.not_packages.emplace_back(entry.name,
                                        "cannot be looked at: " + info.status().message());
      continue;
    }
    if (std::string why = not_a_package_reason(info->type); !why.empty()) {
      listing.not_packages.emplace_back(entry.name, std::move(why));
    } else {
      listing.packages.push_back(entry.name);
    }
  }
  std::sort(listing.packages.begin(), listing.packages.end());
  std::sort(listing.not_packages.begin(), listing.not_packages.end());
  return listing;
}

Result<DropInListing> list_drop_in_folder(const std::string& folder) {
  return list_drop_ins(folder, Env::posix());
}

}  // namespace kcache
