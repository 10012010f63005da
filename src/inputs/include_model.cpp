#include "inputs/include_model.h"

#include <algorithm>
#include <filesystem>
#include <set>

namespace kcache {
namespace {

std::string parent_of(const std::string& path) {
  const std::size_t slash = path.find_last_of('/');
  if (slash == std::string::npos) return ".";
  if (slash == 0) return "/";
  return path.substr(0, slash);
}

std::string memory_parent(const std::string& name) {
  const std::size_t slash = name.find_last_of('/');
  return slash == std::string::npos ? std::string() : name.substr(0, slash);
}

// Whether the dialect matches in-memory headers by their exact name before
// any folder (NVRTC and hipRTC do; a generic compiler may).
bool memory_by_name(Dialect dialect) {
  return dialect == Dialect::kNvrtc || dialect == Dialect::kHiprtc || dialect == Dialect::kGeneric;
}

}  // namespace

std::string source_folder_of(const std::string& name) { return parent_of(name); }

std::string normal_relative(const std::string& path) {
  std::vector<std::string_view> parts;
  std::string_view rest = path;
  while (!rest.empty()) {
    const std::size_t slash = rest.find('/');
    const std::string_view part = rest.substr(0, slash);
    rest = slash == std::string_view::npos ? std::string_view() : rest.substr(slash + 1);
    if (part.empty() || part == ".") continue;
    if (part == "..") {
      if (parts.empty()) return path;
      parts.pop_back();
      continue;
    }
    parts.push_back(part);
  }
  std::string out;
  for (const auto& part : parts) {
    if (!out.empty()) out.push_back('/');
    out += part;
  }
  return out;
}

IncludeModel::IncludeModel(SearchInputs inputs, const Env* env) : inputs_(std::move(inputs)) {
  const Dialect dialect = inputs_.dialect;
  if (dialect != Dialect::kGcc && dialect != Dialect::kHiprtc && dialect != Dialect::kNvcc) return;
  // The folder's inode (or its normal path, when it cannot be looked at).
  auto identity = [env](const std::string& dir) -> std::string {
    if (env != nullptr) {
      if (auto stamp = env->stamp(dir); stamp && stamp->type == FileType::kDirectory) {
        return std::to_string(stamp->id.device) + ":" + std::to_string(stamp->id.inode);
      }
    }
    return "path:" + std::filesystem::path(dir).lexically_normal().string();
  };
  std::set<std::string> system;
  for (const auto* list : {&inputs_.paths, &inputs_.trailing_paths}) {
    for (const auto& path : *list) {
      if (path.role == OptionRole::kSystemDir || path.role == OptionRole::kAfterDir) {
        system.insert(identity(path.path));
      }
    }
  }
  for (const auto& dir : inputs_.env_system_dirs) system.insert(identity(dir));
  if (system.empty()) return;
  auto is_user_dir = [](OptionRole role) {
    return role == OptionRole::kIncludeDir || role == OptionRole::kQuoteDir;
  };
  for (auto* list : {&inputs_.paths, &inputs_.trailing_paths}) {
    std::erase_if(*list, [&](const PathOption& path) {
      return is_user_dir(path.role) && system.contains(identity(path.path));
    });
  }
  std::erase_if(inputs_.include_dirs,
                [&](const std::string& dir) { return system.contains(identity(dir)); });
}

void IncludeModel::add_dirs(std::vector<Place>& out, OptionRole role) const {
  const bool certain = inputs_.dialect != Dialect::kGeneric;
  for (const auto& path : inputs_.paths) {
    if (path.role == role) out.push_back({Place::Kind::kDisk, path.path, false, certain, false});
  }
  if (role == OptionRole::kIncludeDir) {
    if (inputs_.dialect == Dialect::kOpenCl) {
      // The in-memory headers are written to a folder given as -I after
      // the request's options (opencl_compiler.cpp).
      out.push_back({Place::Kind::kMemory, "", false, true, false});
    }
    for (const auto& dir : inputs_.include_dirs) {
      out.push_back({Place::Kind::kDisk, dir, false, certain, false});
    }
  }
  for (const auto& path : inputs_.trailing_paths) {
    if (path.role == role) out.push_back({Place::Kind::kDisk, path.path, false, certain, false});
  }
}

void IncludeModel::add_angle_chain(std::vector<Place>& out) const {
  if (inputs_.dialect == Dialect::kOpenCl) {
    // PoCL puts the working folder first on the include path (checked with
    // PoCL 3.1: a header there wins over -I, for "x" and <x> alike).
    out.push_back({Place::Kind::kDisk, ".", false, true, false});
  }
  add_dirs(out, OptionRole::kIncludeDir);
  add_dirs(out, OptionRole::kSystemDir);
  for (const auto& dir : inputs_.env_system_dirs) {
    out.push_back({Place::Kind::kDisk, dir, false, false, false});
  }
  for (const auto& dir : inputs_.toolkit_dirs) {
    out.push_back({Place::Kind::kDisk, dir, false, true, true});
  }
  add_dirs(out, OptionRole::kAfterDir);
}

std::vector<Place> IncludeModel::places(const std::string& name, bool quoted,
                                        const Includer& from) const {
  const Dialect dialect = inputs_.dialect;
  const bool generic = dialect == Dialect::kGeneric;
  std::vector<Place> out;
  if (memory_by_name(dialect)) out.push_back({Place::Kind::kMemory, "", true, !generic, false});
  if (name.starts_with('/')) {
    out.push_back({Place::Kind::kDisk, "", false, true, false});  // the name itself
    return out;
  }
  if (quoted) {
    switch (from.kind) {
      case Includer::Kind::kMain:
        if (dialect == Dialect::kNvrtc && !inputs_.no_source_include) {
          // NVRTC searches the folder of the program's name: the working
          // folder for a name without one (checked with NVRTC 13.0).
          out.push_back({Place::Kind::kDisk, inputs_.source_folder, false, true, false});
        } else if (dialect == Dialect::kGcc || dialect == Dialect::kNvcc || generic) {
          // The command backend writes the source beside the in-memory
          // headers.
          out.push_back({Place::Kind::kMemory, "", false, !generic, false});
        }
        break;
      case Includer::Kind::kDisk:
        out.push_back({Place::Kind::kDisk, parent_of(from.path), false, !generic, false});
        break;
      case Includer::Kind::kMemory: {
        const std::string folder = memory_parent(from.path);
        if (dialect == Dialect::kNvrtc) {
          // NVRTC gives an in-memory header no folder of its own; where it
          // looks for its quoted includes is not documented.
          out.push_back({Place::Kind::kDisk, folder.empty() ? "." : folder, false, false, false});
        } else {
          const bool files =
              dialect == Dialect::kOpenCl || dialect == Dialect::kGcc || dialect == Dialect::kNvcc;
          out.push_back({Place::Kind::kMemory, folder, false, files, false});
        }
        break;
      }
    }
    add_dirs(out, OptionRole::kQuoteDir);
  }
  add_angle_chain(out);
  return out;
}

std::vector<Place> IncludeModel::forced_places(const std::string& name) const {
  const bool generic = inputs_.dialect == Dialect::kGeneric;
  std::vector<Place> out;
  if (memory_by_name(inputs_.dialect)) {
    out.push_back({Place::Kind::kMemory, "", true, !generic, false});
  }
  if (name.starts_with('/')) {
    out.push_back({Place::Kind::kDisk, "", false, true, false});
    return out;
  }
  out.push_back({Place::Kind::kDisk, ".", false, !generic, false});
  add_dirs(out, OptionRole::kQuoteDir);
  add_angle_chain(out);
  return out;
}

std::vector<Place> IncludeModel::every_place() const {
  std::vector<Place> out;
  out.push_back({Place::Kind::kMemory, "", false, false, false});
  const Dialect dialect = inputs_.dialect;
  if (dialect == Dialect::kNvrtc || dialect == Dialect::kOpenCl || !forced_includes().empty()) {
    out.push_back({Place::Kind::kDisk, ".", false, false, false});
  }
  add_dirs(out, OptionRole::kQuoteDir);
  add_angle_chain(out);
  for (auto& place : out) place.certain = false;
  // One walk per folder.
  std::vector<Place> unique;
  for (auto& place : out) {
    const bool seen = std::any_of(unique.begin(), unique.end(), [&](const Place& p) {
      return p.kind == place.kind && p.dir == place.dir;
    });
    if (!seen) unique.push_back(std::move(place));
  }
  return unique;
}

std::vector<std::string> IncludeModel::forced_includes() const {
  std::vector<std::string> files;
  for (const auto* list : {&inputs_.paths, &inputs_.trailing_paths}) {
    for (const auto& path : *list) {
      if (path.role == OptionRole::kForcedInclude || path.role == OptionRole::kMacrosFile) {
        files.push_back(path.path);
      }
    }
  }
  return files;
}

}  // namespace kcache
