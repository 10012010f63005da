// kcache merge: packages of one database joined into one, each kernel
// once.
#include <kcache/package.h>

#include <filesystem>
#include <iostream>
#include <memory>
#include <string>
#include <vector>

#include "commands/commands.h"
#include "support/failure_report.h"
#include "support/human_text.h"
#include "support/option_checks.h"
#include "support/package_warnings.h"
#include "support/user_paths.h"

namespace kcache::tool {
namespace {

int run_merge(const std::vector<std::string>& packages, const std::string& output,
              const std::string& sign) {
  // Written over one of its own inputs, the package would lose that
  // input's signature (the merge is a new package) with nothing said.
  for (const auto& path : packages) {
    if (same_file(output, path)) {
      std::cerr << "kcache: --output " << output << " is one of the packages merged (" << path
                << "); name another file for the merged package\n";
      return 2;
    }
  }
  if (Status s = check_package_output(output, "--output " + output); !s.is_ok()) {
    return report_failure(s.message());
  }
  if (!sign.empty()) {
    if (int bad = check_key_option("--sign", sign); bad != 0) return bad;
  }
  // Its folder is made, as pack makes its package's.
  if (const auto folder = std::filesystem::path(output).parent_path(); !folder.empty()) {
    if (Status s = make_folders(folder.string(), 0755); !s.is_ok()) {
      return report_failure("--output: " + s.message());
    }
  }
  auto report = merge_packages_reporting(packages, output, sign);
  if (!report) return report_failure(report.status().message() + "; nothing written");
  std::cout << "merged " << counted(packages.size(), "package") << " into " << output << " ("
            << counted(report->entries, "kernel") << ")\n";
  // A merge is a new package: the inputs' signatures do not carry over.
  if (sign.empty()) {
    for (const auto& path : packages) {
      if (auto info = read_package_info(path); info && !info->signer.empty()) {
        std::cerr << "kcache: note: " << path << " was signed (key " << info->signer << "); "
                  << output << " is not: sign it (kcache sign, or merge --sign) for systems "
                  << "that trust only signed packages (KCACHE_TRUSTED_KEYS)\n";
        break;
      }
    }
  }
  if (report->differing > 0) {
    std::cerr << "kcache: note: " << counted(report->differing, "kernel")
              << (report->differing == 1 ? " has" : " have")
              << " another binary in a later package than in the first that holds it (the first "
                 "kept; the compiler's output differs from run to run, or a package was "
                 "altered): "
              << report->first_differing
              << (report->differing > 1 ? " and " + std::to_string(report->differing - 1) + " more"
                                        : "")
              << "\n";
  }
  const std::uint64_t bad = report->left_out;
  if (bad == 0) return 0;
  std::string inputs;
  for (const auto& path : packages) inputs += (inputs.empty() ? "" : " ") + path;
  return report_left_out(inputs, bad);
}

}  // namespace

Runner add_merge_command(CLI::App& app) {
  auto packages = std::make_shared<std::vector<std::string>>();
  auto output = std::make_shared<std::string>();
  auto sign = std::make_shared<std::string>();
  CLI::App* cmd =
      app.add_subcommand("merge", "Join packages of one database into one (each kernel once)");
  cmd->add_option("packages", *packages, "Packages (.kdb) to join")->required();
  cmd->add_option("--output,-o", *output, "The package to write")
      ->required()
      ->check(names_a_path());
  cmd->add_option("--sign", *sign, "Sign the package with this private key (kcache keygen)")
      ->check(names_a_path());
  return [packages, output, sign] { return run_merge(*packages, *output, *sign); };
}

}  // namespace kcache::tool
