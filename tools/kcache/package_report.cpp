// kcache info PKG... and kcache verify PKG...: what packages say of
// themselves, and whether the system tier would use them.
#include <kcache/compiler.h>
#include <kcache/options.h>
#include <kcache/package.h>

#include <dlfcn.h>

#include <nlohmann/json.hpp>

#include <algorithm>
#include <ctime>
#include <filesystem>
#include <iostream>
#include <map>
#include <memory>
#include <set>

#include "commands/commands.h"
#include "support/human_text.h"
#include "support/json_text.h"

namespace kcache::tool {
namespace {

// The keys packages are held to: those named, else KCACHE_TRUSTED_KEYS.
// A named key that cannot be used is a usage error (nullopt, said); a
// configured one a warning.
std::optional<std::vector<std::string>> keys_to_check(const std::vector<std::string>& named) {
  if (!named.empty()) {
    // Judged as the system tier judges KCACHE_TRUSTED_KEYS: a key it would
    // pass over is said and passed over; none at all is a failure.
    const TrustedKeyList listed = list_trusted_keys(named);
    for (const auto& problem : listed.problems) {
      std::cerr << "kcache: " << (listed.ids.empty() ? "" : "warning: ") << "--trusted: " << problem
                << "\n";
    }
    if (listed.ids.empty()) {
      if (listed.problems.empty()) std::cerr << "kcache: --trusted: no key could be read\n";
      return std::nullopt;
    }
    return named;
  }
  std::vector<std::string> configured = resolve_config(CacheOptions{}).trusted_keys;
  if (auto ids = read_trusted_keys(configured); !ids) {
    std::cerr << "kcache: Warning [SystemDb] " << ids.status().message() << "\n";
  }
  return configured;
}

std::string date_of(const std::string& unix_seconds) {
  const auto when = static_cast<std::time_t>(std::strtoll(unix_seconds.c_str(), nullptr, 10));
  char date[32];
  std::tm utc{};
  if (gmtime_r(&when, &utc) == nullptr ||
      std::strftime(date, sizeof date, "%Y-%m-%d %H:%M:%S UTC", &utc) == 0) {
    return unix_seconds;
  }
  return std::string(date) + " (" + unix_seconds + ")";
}

std::string signature_text(const PackageInfo& info) {
  if (info.signer.empty()) return "no";
  if (!info.signature_problem.empty())
    // The key it names is not confirmed: a forger can name any.
    return "BROKEN (it names key " + info.signer + "): " + info.signature_problem;
  // The signature is over the index and each entry's digest: it can hold
  // while entries do not match their digests.
  if (info.entries_not_as_signed > 0) {
    return "by key " + info.signer + " (the signature holds, but " +
           not_as_signed_text(info.entries_not_as_signed, info.kernels) + ")";
  }
  return "by key " + info.signer + " (the signature holds)";
}

// What `kcache info PKG` says of its entries: those never served, and
// those not as signed, which the system tier serves unless keys are set.
std::string entries_text(const PackageInfo& info, bool keys_set) {
  if (info.bad_entries == 0) return "all pass their checks";
  std::string text;
  if (const std::uint64_t damaged = info.bad_entries - info.entries_not_as_signed; damaged > 0) {
    text = failing_entries(damaged, info.kernels) + " (never served)";
  }
  if (info.entries_not_as_signed > 0) {
    text += (text.empty() ? "" : "; ") +
            not_as_signed_text(info.entries_not_as_signed, info.kernels) +
            (keys_set ? " (the system tier refuses the package whole)"
                      : " (served all the same: without trusted keys the system tier checks "
                        "each entry's checksum, not its signed digest)");
  }
  return text;
}

// Whether the system tier would use it, and on what grounds: what it
// checks, and what it does not, when no trusted keys are set.
std::string trusted_text(const PackageInfo& info, bool keys_set) {
  if (!info.refusal.empty()) return "no: " + info.refusal + " (the system tier will not use it)";
  if (keys_set) {
    return "yes: signed by a trusted key (the system tier checks each entry against the "
           "signature)";
  }
  std::string text =
      "yes, by its file's owner and mode alone: no trusted keys are set (KCACHE_TRUSTED_KEYS), "
      "so the system tier ";
  text += info.signer.empty() ? std::string("asks for no signature")
                              : "checks its signature once, not each entry against it";
  if (info.entries_not_as_signed > 0) {
    text += ", and would serve the " + counted(info.entries_not_as_signed, "entry", "entries") +
            " not as signed";
  }
  return text;
}

// The database the package at `path` is found as in the system folder
// `described` lists (by its name there); empty when it does not lie there.
std::string found_as(const std::string& path, const SystemFolder& described) {
  const std::filesystem::path file(path);
  std::filesystem::path parent = file.parent_path();
  if (parent.empty()) parent = ".";
  for (const SystemFolderItem& item : described.items) {
    const std::filesystem::path listed(item.path);
    std::error_code error;
    if (listed.filename() == file.filename() &&
        std::filesystem::equivalent(listed.parent_path(), parent, error)) {
      return item.db;
    }
  }
  return {};
}

// The target features its kernels were compiled for (the db names the
// arch alone): "xnack-" for gfx90a:xnack-.
std::vector<std::string> features_of(const PackageInfo& info) {
  std::vector<std::string> features;
  for (const auto& [name, value] : info.metadata) {
    if (name == "features") features.push_back(value);
  }
  return features;
}

// Its target as a request names it: "gfx90a:xnack-", or the db and its
// features when they are several.
std::string target_text(const PackageInfo& info) {
  const auto features = features_of(info);
  if (features.empty()) return db_of(info);
  if (features.size() == 1) return db_of(info) + ":" + features[0];
  std::string list;
  for (const auto& one : features) list += (list.empty() ? "" : ", ") + one;
  return db_of(info) + " (features " + list + ")";
}

nlohmann::json package_json(const PackageInfo& info) {
  nlohmann::json metadata = nlohmann::json::object();
  for (const auto& [name, value] : info.metadata) {
    if (name == "compiler") {
      metadata["compilers"].push_back(value);
    } else {
      metadata[name] = value;
    }
  }
  return {{"path", info.path},
          {"format", info.format_version},
          {"target", db_of(info)},
          {"features", features_of(info)},
          {"kernels", info.kernels},
          {"metadata", metadata},
          {"signer", info.signer},
          {"signature_ok", !info.signer.empty() && info.signature_problem.empty()},
          {"signature_problem", info.signature_problem},
          {"trusted", info.refusal.empty()},
          {"untrusted_reason", info.refusal}};
}

// The compiler of `backend` on this machine, made once (nullptr when it
// cannot be made here: its runtime is missing, or it needs a command).
const Compiler* local_compiler(const std::string& backend) {
  static std::map<std::string, std::unique_ptr<Compiler>> made;
  auto [it, added] = made.try_emplace(backend);
  if (added && backend != "command") {
    CompilerConfig config;
    config.backend = backend;
    if (auto compiler = make_compiler(config)) it->second = std::move(*compiler);
  }
  return it->second.get();
}

// This machine's CUDA devices as the targets the CUDA loader asks for
// ("sm_80_108"), from the driver, loaded at run time as the loader loads
// it; none without a driver or a device.
const std::vector<Target>& cuda_devices() {
  static const std::vector<Target> devices = [] {
    std::vector<Target> found;
    void* driver = ::dlopen("libcuda.so.1", RTLD_NOW | RTLD_LOCAL);
    if (driver == nullptr) return found;
    auto init = reinterpret_cast<int (*)(unsigned)>(::dlsym(driver, "cuInit"));
    auto count_of = reinterpret_cast<int (*)(int*)>(::dlsym(driver, "cuDeviceGetCount"));
    auto device_of = reinterpret_cast<int (*)(int*, int)>(::dlsym(driver, "cuDeviceGet"));
    auto attribute =
        reinterpret_cast<int (*)(int*, int, int)>(::dlsym(driver, "cuDeviceGetAttribute"));
    int count = 0;
    if (!init || !count_of || !device_of || !attribute || init(0) != 0 || count_of(&count) != 0) {
      return found;
    }
    for (int i = 0; i < count; ++i) {
      int device = 0, major = 0, minor = 0, units = 0;
      if (device_of(&device, i) != 0 || attribute(&major, 75, device) != 0 ||
          attribute(&minor, 76, device) != 0 || attribute(&units, 16, device) != 0) {
        continue;
      }
      found.push_back(Target{"sm_" + std::to_string(major * 10 + minor), "", units});
    }
    return found;
  }();
  return devices;
}

// Why a CUDA package for `db` does not fit this machine's devices (empty
// when one of them is its target); `note` says when none could be asked.
std::string why_not_these_gpus(const std::string& db, std::vector<std::string>& notes) {
  if (!db.starts_with("sm_")) return {};  // PTX (compute_NN): the driver compiles it for any
  const auto& devices = cuda_devices();
  if (devices.empty()) {
    notes.push_back("no CUDA device answers here, so its target " + db + " is not checked");
    return {};
  }
  std::string names;
  for (const auto& device : devices) {
    if (device.db_basename() == db || device.arch_basename() == db) return {};
    names += (names.empty() ? "" : ", ") + device.db_basename();
  }
  return "it is for " + db + ", and this machine's CUDA devices are " + names;
}

// Why a package the system tier uses does not apply to this machine: a
// backend it was packed for finds its toolchain here, and its target is
// not one this toolchain (or, for OpenCL and CUDA, this machine's device)
// takes. Empty when it applies; `note` says what could not be checked.
std::string why_not_here(const PackageInfo& info, const std::string& db, std::string* note) {
  std::set<std::string> backends;
  for (const auto& [name, value] : info.metadata) {
    if (name == "compiler") backends.insert(value.substr(0, value.find(" | ")));
  }
  std::vector<std::string> unchecked;
  std::vector<std::string> notes;
  for (const auto& backend : backends) {
    if (backend == "command") {  // no toolchain to ask: a command's targets are its own
      notes.push_back("not checked for command (its targets are its command's own)");
      continue;
    }
    const Compiler* compiler = local_compiler(backend);
    if (compiler == nullptr) {
      unchecked.push_back(backend);
      continue;
    }
    if (std::string unfit = package_unfit_reason(info, db, compiler->identity()); !unfit.empty()) {
      return unfit;
    }
    if (backend == "opencl") {
      auto device = compiler->resolve_target(Target{});
      if (device && device->db_basename() != db && device->arch_basename() != db) {
        return "it is for " + db + ", and this machine's OpenCL device is " + device->db_basename();
      }
    }
    if (backend == "nvrtc") {
      if (std::string unfit = why_not_these_gpus(db, notes); !unfit.empty()) return unfit;
    }
    if (backend == "hip") {  // the toolchain is asked, not the GPU (design.md §3)
      notes.push_back("no AMD GPU is asked here, so its target " + db + " is not checked");
    }
  }
  std::string list;
  for (const auto& b : unchecked) list += (list.empty() ? "" : ", ") + b;
  if (!list.empty()) {
    notes.push_back("not checked here for " + list + " (its toolchain cannot be started here)");
  }
  for (const auto& one : notes) *note += (note->empty() ? "" : "; ") + one;
  return {};
}

}  // namespace

std::string report_installed_packages(const std::string& folder, bool json, nlohmann::json* out) {
  const std::vector<std::string> keys = *keys_to_check({});
  const SystemFolder described = describe_system_folder(folder, keys);
  const std::string& problem = described.problem;
  if (!json)
    std::cout << "\nsystem packages (" << shown(folder) << ")"
              << (!described.items.empty() ? ":"
                  : problem.empty()        ? ": none"
                                           : ": none (" + problem + ")")
              << "\n";
  for (const SystemFolderItem& item : described.items) {
    // Ruled out by its place alone: not read.
    if (!item.opened) {
      if (json) {
        out->push_back({{"path", item.path},
                        {"db", item.db},
                        {"applies", false},
                        {"why_not", item.why_not_used},
                        {"note", ""},
                        {"checked", true}});
      } else {
        std::cout << "  " << shown(item.name) << ": does not apply: " << shown(item.why_not_used)
                  << "\n";
      }
      continue;
    }
    auto info = read_package_info(item.path, /*check_entries=*/false, keys);
    std::string note;
    const std::string why = !item.used() ? item.why_not_used
                            : info       ? why_not_here(*info, item.db, &note)
                                         : info.status().message();
    if (json) {
      nlohmann::json one = info ? package_json(*info) : nlohmann::json{{"path", item.path}};
      one["db"] = item.db;
      one["applies"] = why.empty();
      one["why_not"] = why;
      one["note"] = note;
      one["checked"] = note.empty();  // whether "applies" was found here, not assumed
      out->push_back(std::move(one));
      continue;
    }
    // A note is what could not be checked here: "may apply", not "applies".
    const std::string verdict = !why.empty()   ? "does not apply: " + why
                                : note.empty() ? "applies to this machine"
                                               : "may apply: " + note;
    std::cout << "  " << shown(item.name) << ": "
              << (info ? counted(info->kernels, "kernel") + ", " : "") << shown(verdict) << "\n";
  }
  return problem;
}

int run_package_info(bool json, const std::vector<std::string>& packages) {
  auto keys = keys_to_check({});
  int status = 0;
  nlohmann::json out = nlohmann::json::array();
  for (const auto& path : packages) {
    // Its entries read too: what it says of itself is not all (an entry
    // altered after signing refuses a signed package under trusted keys).
    auto info = read_package_info(path, /*check_entries=*/true, *keys);
    if (!info) {
      status = report_failure(about(path, info.status().message()));
      // In JSON too: one object for each package named, in their order.
      if (json) out.push_back({{"path", path}, {"error", info.status().message()}});
      continue;
    }
    // read_package_info says when the tier refuses it whole (an entry not
    // as signed, under trusted keys): package_json's "trusted" holds it.
    if (json) {
      nlohmann::json one = package_json(*info);
      one["bad_entries"] = info->bad_entries;
      one["entries_not_as_signed"] = info->entries_not_as_signed;
      // On what grounds "trusted" is said: a trusted key's signature, or
      // (no keys set) the file's owner and mode alone.
      one["trusted_keys_set"] = !keys->empty();
      out.push_back(std::move(one));
      continue;
    }
    auto row = [](const std::string& name) {
      return "  " + name + std::string(name.size() < 13 ? 14 - name.size() : 1, ' ');
    };
    std::cout << shown(info->path) << "\n"
              << row("format") << info->format_version << "\n"
              << row("target") << shown(target_text(*info)) << "\n"
              << row("kernels") << info->kernels << "\n";
    for (const auto& [name, value] : info->metadata) {
      std::cout << row(shown(name)) << (name == "created" ? date_of(value) : shown(value)) << "\n";
    }
    const bool keys_set = !keys->empty();
    std::cout << row("entries") << entries_text(*info, keys_set) << "\n"
              << row("signed") << signature_text(*info) << "\n"
              << row("trusted") << trusted_text(*info, keys_set) << "\n";
  }
  if (json) std::cout << json_text(out, 2) << "\n";
  return status;
}

int run_verify_packages(bool json, const std::vector<std::string>& packages,
                        const std::vector<std::string>& trusted_keys) {
  auto keys = keys_to_check(trusted_keys);
  if (!keys) return 1;  // a key file that cannot be used, as an unreadable input
  // Where a package lies in the system folder, its name there is its
  // database (install names it).
  const std::string system_folder = resolve_config(CacheOptions{}).system_db_path;
  const SystemFolder installed =
      system_folder.empty() ? SystemFolder{} : describe_system_folder(system_folder);
  int status = 0;
  nlohmann::json out = nlohmann::json::array();
  for (const auto& path : packages) {
    auto info = read_package_info(path, /*check_entries=*/true, *keys);
    std::vector<std::string> problems;
    if (!info) {
      problems.push_back(info.status().message());
    } else {
      if (info->bad_entries > 0) {
        problems.push_back(failing_entries(info->bad_entries, info->kernels));
        // Which (import and merge send the user here to learn it).
        constexpr std::size_t kNamed = 20;
        const auto& bad = info->bad_entry_problems;
        for (std::size_t i = 0; i < bad.size() && i < kNamed; ++i) {
          problems.push_back("entry " + bad[i].first + ": " + bad[i].second);
        }
        if (bad.size() > kNamed) {
          problems.push_back(std::to_string(bad.size() - kNamed) + " more entries fail");
        }
      }
      if (!info->signature_problem.empty()) problems.push_back(info->signature_problem);
      // A broken signature is the refusal too: said once, and the key it
      // names is not confirmed (whether that key is trusted is moot).
      if (!info->refusal.empty() && info->signature_problem.empty()) {
        problems.push_back("the system tier would not use it: " + info->refusal);
      }
      // Another key or entry format: no kcache of this one uses it. Its
      // name is its own only in the system folder (install names it).
      std::string db = found_as(path, installed);
      if (db.empty()) db = db_of(*info);
      if (std::string unfit = package_unfit_reason(*info, db, CompilerIdentity{}); !unfit.empty()) {
        problems.push_back("the system tier would not use it: " + unfit);
      }
    }
    if (!problems.empty()) status = 1;
    if (json) {
      nlohmann::json one = info ? package_json(*info) : nlohmann::json{{"path", path}};
      // Unknown (null) when the package could not be read at all.
      one["bad_entries"] = info ? nlohmann::json(info->bad_entries) : nlohmann::json(nullptr);
      one["problems"] = problems;
      one["ok"] = problems.empty();
      out.push_back(std::move(one));
      continue;
    }
    if (problems.empty()) {
      std::cout << shown(path) << ": ok, " << counted(info->kernels, "kernel")
                << (info->signer.empty() ? ", not signed" : ", signed by key " + info->signer)
                << (keys->empty() ? "" : ", trusted") << "\n";
    }
    for (const auto& problem : problems) {
      std::cout << shown(path) << ": problem: " << shown(problem) << "\n";
    }
  }
  if (json) std::cout << json_text(out, 2) << "\n";
  return status;
}

std::string db_of(const PackageInfo& info) {
  for (const auto& [name, value] : info.metadata) {
    if (name == "db") return value;
  }
  return {};
}

}  // namespace kcache::tool
