#include "store/system/system_verifier.h"

#include "format/kdb_file.h"
#include "store/system/package_fit.h"
#include "store/system/system_folder.h"
#include "store/system/trusted_keys.h"

namespace kcache {
namespace {

// Packages are read-only here: verify names the problem, --repair leaves it.
constexpr const char* kNotRepaired = " (a read-only package: reinstall or remove it)";

}  // namespace

SystemVerifier::SystemVerifier(std::string folder, const PackageTrust& trust, const Env& env)
    : folder_(std::move(folder)), trust_(trust), env_(env) {}

Status SystemVerifier::verify(VerifyReport& report) const {
  auto names = list_system_databases(folder_, env_);
  if (!names) return names.status();
  for (const auto& db : *names) {
    const std::string path = system_package_path(folder_, db);
    if (auto there = env_.file_info(path);
        there || there.status().code() != StatusCode::kNotFound) {
      verify_package(path, db, report);
    }
    const std::string drop_ins = drop_in_folder_of(folder_, db);
    const DropInFolder listed = read_drop_in_folder(drop_ins, env_);
    if (listed.problem != DropInFolder::Problem::kNone) {
      report.problems.push_back(
          {drop_ins, drop_in_folder_problem(drop_ins, listed) + "; its packages are not used",
           false});
      continue;
    }
    for (const auto& [name, why] : listed.not_packages) {
      report.problems.push_back({drop_ins + "/" + name, "not used: " + why, false});
    }
    for (std::size_t i = 0; i < listed.packages.size(); ++i) {
      const std::string drop_in = drop_ins + "/" + listed.packages[i];
      if (i >= listed.used()) {
        report.problems.push_back({drop_in, "not used: " + drop_in_not_used_reason(db), false});
        continue;
      }
      verify_package(drop_in, db, report);
    }
  }
  return Status::ok();
}

void SystemVerifier::verify_package(const std::string& path, const std::string& db,
                                    VerifyReport& report) const {
  ++report.databases_checked;
  if (auto refused = trust_.owner_refusal(path)) {
    report.problems.push_back({path, *refused, false});
    return;
  }
  auto kdb = KdbReader::open(path, env_);
  if (!kdb) {
    report.problems.push_back({path, kdb.status().message() + kNotRepaired, false});
    return;
  }
  // A signature is checked whether or not keys are trusted: an altered
  // signed package is a problem either way.
  if (auto refused = trust_.signature_refusal(**kdb)) {
    report.problems.push_back({path, *refused, false});
    return;
  }
  // Another key or entry format, or another database's kernels (a
  // renamed file, a drop-in in another database's folder): never used
  // here, whatever the compiler.
  if (auto unfit = unfit_reason((*kdb)->metadata(), db, CompilerIdentity{})) {
    report.problems.push_back({path, "not used: " + *unfit, false});
    return;
  }
  for (const auto& slot : (*kdb)->slots()) {
    ++report.entries_checked;
    auto bytes = (*kdb)->read(slot);
    Result<Entry> entry =
        bytes ? decode_package_entry(**kdb, slot, *bytes) : Result<Entry>(bytes.status());
    if (entry) {
      ++report.entries_ok;
    } else {
      report.problems.push_back(
          {path + "#" + slot.key.hex(), entry.status().message() + kNotRepaired, false});
    }
  }
}

}  // namespace kcache
