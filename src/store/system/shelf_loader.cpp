#include "store/system/shelf_loader.h"

#include <algorithm>

#include "store/system/system_folder.h"

namespace kcache {

bool ShelfLoader::FileStamp::same_as(const std::optional<FileInfo>& now) const {
  if (seen.has_value() != now.has_value()) return false;
  return !seen || (seen->type == now->type && seen->id == now->id && seen->size == now->size &&
                   seen->modified_unix == now->modified_unix);
}

ShelfLoader::ShelfLoader(std::string folder, const PackageOpener& opener, const Env& env,
                         const Logger& log, std::chrono::milliseconds recheck)
    : recheck_ns_(std::chrono::nanoseconds(recheck).count()),
      folder_(std::move(folder)),
      opener_(opener),
      env_(env),
      log_(log) {}

ShelfLoader::LookupShelves ShelfLoader::shelves_for(const DbNames& db, std::int64_t now_ns) {
  LookupShelves shelves;
  MutexLock lock(mutex_);
  shelves.exact = shelf_locked(db.exact, now_ns);
  if (db.arch != db.exact) shelves.arch = shelf_locked(db.arch, now_ns);
  return shelves;
}

void ShelfLoader::reopen(const std::string& db, const ShelvedPackage& p) {
  const std::string& path = p.reader->path();
  auto now = env_.file_info(path);
  if (now && now->id == p.reader->file_id()) {
    log_.warn_once("SystemDb:changed:" + path, "SystemDb",
                   "System database file " + path +
                       " changed while in use (install packages by renaming a whole file "
                       "over the old one, as kcache install does); it is read again");
  } else {
    log_.debug("SystemDb", path + " was replaced; the new file is opened");
  }
  MutexLock lock(mutex_);
  auto it = shelves_.find(db);
  if (it == shelves_.end()) return;
  const auto& held = it->second.shelf->packages;
  if (std::any_of(held.begin(), held.end(), [&](const auto& one) { return one.get() == &p; })) {
    shelves_.erase(it);
  }
}

std::shared_ptr<const Shelf> ShelfLoader::shelf_locked(const std::string& db, std::int64_t now_ns) {
  auto it = shelves_.find(db);
  if (it != shelves_.end()) {
    HeldShelf& held = it->second;
    if (now_ns - held.checked_ns < recheck_ns_) return held.shelf;
    held.checked_ns = now_ns;
    if (std::all_of(held.stamps.begin(), held.stamps.end(), [&](const FileStamp& stamp) {
          return stamp.same_as(file_info_or_none(stamp.path));
        })) {
      return held.shelf;
    }
    log_.debug("SystemDb", "the packages of " + db + " changed on disk; they are opened anew");
    shelves_.erase(it);  // lookups holding it finish with it
  }
  auto shelf = std::make_shared<Shelf>();
  HeldShelf held;
  shelf->db = db;
  held.checked_ns = now_ns;
  // Stamped before they are opened: a change after the stamp is seen
  // at the next look, never missed.
  const std::string main = system_package_path(folder_, db);
  const std::string drop_ins = drop_in_folder_of(folder_, db);
  held.stamps.push_back({main, file_info_or_none(main)});
  held.stamps.push_back({drop_ins, file_info_or_none(drop_ins)});
  shelf->packages.push_back(opener_.open(main));
  if (const DropInFolder listed = read_drop_in_folder(drop_ins, env_);
      listed.problem == DropInFolder::Problem::kNone) {
    for (const auto& [name, why] : listed.not_packages) {
      const std::string path = drop_ins + "/" + name;
      log_.warn_once("SystemDb:not-a-package:" + path, "SystemDb",
                     "System database drop-in " + path + " is not used: it is " + why);
    }
    // Each is held open (and mapped) for the process: a bound, so that a
    // folder of hundreds cannot take the program's descriptors.
    if (listed.used() < listed.packages.size()) {
      log_.warn_once("SystemDb:many:" + drop_ins, "SystemDb",
                     "System database drop-in folder " + drop_ins + " holds " +
                         std::to_string(listed.packages.size()) + " packages; the first " +
                         std::to_string(kMostDropIns) + " in name order are used");
    }
    for (std::size_t i = 0; i < listed.used(); ++i) {
      const std::string path = drop_ins + "/" + listed.packages[i];
      held.stamps.push_back({path, file_info_or_none(path)});
      shelf->packages.push_back(opener_.open(path));
    }
  } else if (env_.list_dir(folder_)) {  // else the folder was said as one
    // There, but its packages cannot be told apart: said once, and the
    // database is not "missing".
    shelf->present = true;
    log_.warn_once("SystemDb:folder:" + drop_ins, "SystemDb",
                   drop_in_folder_problem(drop_ins, listed) + "; its packages are not used");
  }
  for (const auto& p : shelf->packages) shelf->present = shelf->present || p->present;
  held.shelf = shelf;
  shelves_[db] = std::move(held);
  return shelf;
}

std::optional<FileInfo> ShelfLoader::file_info_or_none(const std::string& path) const {
  auto info = env_.file_info(path);
  return info ? std::optional<FileInfo>(*info) : std::nullopt;
}

}  // namespace kcache
