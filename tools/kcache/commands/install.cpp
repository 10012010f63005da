// kcache install: packages put where the system tier finds them, as
// <db>.kdb or as a drop-in beside other libraries' packages; checked
// whole, then renamed in.
#include <kcache/options.h>
#include <kcache/package.h>

#include <algorithm>
#include <cctype>
#include <filesystem>
#include <iostream>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <system_error>
#include <vector>

#include "commands/commands.h"
#include "support/failure_report.h"
#include "support/human_text.h"
#include "support/package_fields.h"
#include "support/package_warnings.h"
#include "support/user_paths.h"

namespace kcache::tool {
namespace {

// Why the system tier would refuse the package `info` describes whatever
// folder it lay in (empty when it would not): entries that fail their
// checks, a signature that does not hold, under the trusted keys
// (KCACHE_TRUSTED_KEYS) one they do not sign, a database name that is not
// a file name, a key or entry format this kcache does not read.
std::string install_refusal(const PackageInfo& info, const std::vector<std::string>& trusted_keys) {
  if (info.bad_entries > 0) return failing_entries(info.bad_entries, info.kernels);
  if (!info.signature_problem.empty()) {
    return "its signature does not hold (" + info.signature_problem + ")";
  }
  if (!trusted_keys.empty() && !info.refusal.empty()) {
    return info.refusal + " (KCACHE_TRUSTED_KEYS is set)";
  }
  const std::string db = db_of(info);
  if (!valid_db_name(db)) return "it names no database it belongs to";
  return package_unfit_reason(info, db, CompilerIdentity{});
}

// Installs `path` as <folder>/<db>.kdb, or with `drop_in` as the drop-in
// <folder>/<db>.kdb.d/<drop_in>.kdb: checked whole first, then copied to a
// temporary file beside the target, synced, that copy checked whole again
// (what is put in place is what was checked, even if the file at `path`
// was replaced meanwhile) and renamed over the target, so the system tier
// never sees half a package. A package the system tier would refuse is
// not installed (install_refusal), and an installed one it would replace
// stays.
int install_one(const std::string& path, const std::string& folder, const std::string& drop_in,
                const std::vector<std::string>& trusted_keys) {
  auto info = read_package_info(path, /*check_entries=*/true, trusted_keys);
  if (!info)
    return report_failure(with_path_named(path, info.status().message()) + "; not installed");
  if (std::string refusal = install_refusal(*info, trusted_keys); !refusal.empty()) {
    return report_failure(path + ": " + refusal + "; not installed");
  }
  const std::string db = db_of(*info);
  const std::string target = system_package_path(folder, db, drop_in);
  // Folders that others cannot write and a file they can read, whatever
  // the umask: the system tier refuses a package others could have written.
  const std::string into = std::filesystem::path(target).parent_path().string();
  if (Status s = make_folders(into, 0755); !s.is_ok()) return report_failure(s.message());
  auto bytes = read_input_file(path, path, std::uint64_t(1) << 40);
  if (!bytes) return report_failure(bytes.status().message());
  remove_abandoned_outputs(target);  // an install killed midway left its copy
  std::error_code error;
  const bool replacing = std::filesystem::exists(target, error);
  std::uint64_t kernels = info->kernels;
  auto check_copy = [&](const std::string& copy) {
    auto copied = read_package_info(copy, /*check_entries=*/true, trusted_keys);
    std::string refusal =
        copied ? install_refusal(*copied, trusted_keys) : copied.status().message();
    if (refusal.empty() && db_of(*copied) != db) refusal = "it is now for " + db_of(*copied);
    if (!refusal.empty()) {
      return Status::corruption(path + " changed while it was installed, and what was read " +
                                "would not be used: " + refusal + "; not installed");
    }
    kernels = copied->kernels;
    return Status::ok();
  };
  if (Status s = write_output_file(
          target, target, {reinterpret_cast<const std::uint8_t*>(bytes->data()), bytes->size()},
          /*sync=*/true, /*mode=*/0644, check_copy);
      !s.is_ok()) {
    return report_failure(s.message());
  }
  // Said, since a target has one such package (two libraries' packages
  // go side by side with --name).
  std::cout << "installed " << target << " (" << counted(kernels, "kernel")
            << (replacing ? "; it replaces the package that was there" : "") << ")\n";
  warn_if_others_could_write(*info, trusted_keys);
  if (!drop_in.empty()) {
    // In place, but past the drop-ins the tier uses: not what was asked.
    for (const SystemFolderItem& item : describe_system_folder(folder, trusted_keys).items) {
      if (item.path == target && !item.opened) {
        return report_failure("the system tier will not use " + target + ": " + item.why_not_used +
                              "; remove a drop-in before it, or give it a name earlier in order");
      }
    }
  }
  // In place, but refused where it lies (ssh's StrictModes): not what was
  // asked, so not a success. It is left there: with the folder mended (or
  // the package signed by a trusted key) it is used.
  // Under trusted keys the tier asks the signature, not the folder (what
  // it would refuse was refused above).
  if (auto installed = read_package_info(target);
      trusted_keys.empty() && installed && !installed->untrusted.empty()) {
    const std::string& why = installed->untrusted;
    const std::string mend = why.find("owned by") != std::string::npos ? "chown"
                             : why.find("ACL") != std::string::npos    ? "setfacl -b"
                                                                       : "chmod go-w";
    return report_failure("the system tier will not use " + target +
                          ": another user could have written it (" + why +
                          "); fix the owner, mode or ACL of what that names (" + mend +
                          "), or sign the package and trust its key (KCACHE_TRUSTED_KEYS)");
  }
  return 0;
}

// A drop-in's name as --name gives it: letters, digits, '.', '_', '+', '-',
// not starting with '.' (an install's temporary) or '-' (an option, to a
// shell), at most 200; ".kdb" is added.
std::optional<std::string> drop_in_name(const std::optional<std::string>& name) {
  if (!name) return std::string();
  std::string plain = name->ends_with(".kdb") ? name->substr(0, name->size() - 4) : *name;
  // At most 200, as a db name: its install's temporary name is longer.
  const bool fits = !plain.empty() && plain.size() <= 200 && plain[0] != '.' && plain[0] != '-' &&
                    std::all_of(plain.begin(), plain.end(), [](unsigned char c) {
                      return std::isalnum(c) || c == '.' || c == '_' || c == '+' || c == '-';
                    });
  if (!fits) return std::nullopt;
  return plain;
}

int run_install(const std::vector<std::string>& packages, const std::optional<std::string>& prefix,
                const std::optional<std::string>& name) {
  if (prefix && prefix->empty()) {
    std::cerr << "kcache: --prefix is empty; name a folder (or leave --prefix out to install "
                 "into the system folder in use)\n";
    return 2;
  }
  const auto drop_in = drop_in_name(name);
  if (!drop_in) {
    std::cerr << "kcache: --name '" << *name
              << "' is not a drop-in's name: letters, digits, '.', '_', '+' and '-', not "
                 "starting with '.' or '-', at most 200 (e.g. --name mylib)\n";
    return 2;
  }
  // One place, one package a database (<db>.kdb, or the drop-in --name
  // gives): a second of the same database would replace the first at once.
  std::map<std::string, std::string> first_of_db;
  for (const auto& path : packages) {
    auto info = read_package_info(path);
    if (!info) continue;  // said when it is installed
    auto [it, added] = first_of_db.try_emplace(db_of(*info), path);
    if (added) continue;
    const std::string db = db_of(*info);
    std::cerr << "kcache: " << (name ? "--name " + *name + ": " : "") << it->second << " and "
              << path << " are both packages of " << db << ", and "
              << (name ? "one drop-in name" : db + ".kdb") << " holds one; install "
              << (name ? "them" : "one of them, or both") << " with a --name each\n";
    return 2;
  }
  std::string folder;
  const ResolvedConfig config = resolve_config(CacheOptions{});
  if (prefix) {
    folder = (std::filesystem::path(*prefix) / "share/kcache/db").string();
  } else {
    folder = config.system_db_path;
    if (folder.empty()) {
      return report_failure("the cache is disabled, so there is no system folder; give --prefix");
    }
  }
  int status = 0;
  for (const auto& path : packages) {
    status = std::max(status, install_one(path, folder, *drop_in, config.trusted_keys));
  }
  return status;
}

}  // namespace

Runner add_install_command(CLI::App& app) {
  auto packages = std::make_shared<std::vector<std::string>>();
  auto prefix = std::make_shared<std::optional<std::string>>();
  auto name = std::make_shared<std::optional<std::string>>();
  CLI::App* cmd = app.add_subcommand(
      "install", "Put packages where the system tier finds them (checked, then renamed in)");
  cmd->add_option("packages", *packages, "Packages (.kdb) to install")->required();
  cmd->add_option("--prefix", *prefix,
                  "Install into <prefix>/share/kcache/db (default: the system folder in use)");
  cmd->add_option("--name", *name,
                  "Install as the drop-in <db>.kdb.d/<name>.kdb, beside other libraries' "
                  "packages for the same target, not as <db>.kdb");
  return [packages, prefix, name] { return run_install(*packages, *prefix, *name); };
}

}  // namespace kcache::tool
