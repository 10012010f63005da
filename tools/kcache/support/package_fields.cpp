#include "support/package_fields.h"

namespace kcache::tool {

std::string db_of(const PackageInfo& info) {
  for (const auto& [name, value] : info.metadata) {
    if (name == "db") return value;
  }
  return {};
}

std::vector<std::string> features_of(const PackageInfo& info) {
  std::vector<std::string> features;
  for (const auto& [name, value] : info.metadata) {
    if (name == "features") features.push_back(value);
  }
  return features;
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

}  // namespace kcache::tool
