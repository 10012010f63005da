#include "store/system/package_fit.h"

#include <algorithm>

#include "format/entry.h"
#include "format/key_schema.h"

namespace kcache {
namespace {

// Where two identity texts first differ, by their " | " parts, shortened:
// "packed with 'build sha256:9117e0f13b51...', here 'build sha256:a045...'".
// Parts that begin alike for long are shown from the word where they part
// ("...sha256:3b19...", not the same 48 characters twice).
std::string first_difference(std::string_view theirs, std::string_view mine) {
  constexpr std::string_view kBar = " | ";
  constexpr std::size_t kShown = 48;
  std::size_t from = 0;  // where both parts are shown from
  auto part = [&](std::string_view text) {
    text = text.substr(0, text.find(kBar));
    const std::string head = from > 0 ? "..." : "";
    text.remove_prefix(std::min(from, text.size()));
    return head + std::string(text.substr(0, kShown)) + (text.size() > kShown ? "..." : "");
  };
  while (!theirs.empty() && !mine.empty() &&
         theirs.substr(0, theirs.find(kBar)) == mine.substr(0, mine.find(kBar))) {
    const auto next_theirs = theirs.find(kBar);
    const auto next_mine = mine.find(kBar);
    theirs = next_theirs == std::string_view::npos ? "" : theirs.substr(next_theirs + kBar.size());
    mine = next_mine == std::string_view::npos ? "" : mine.substr(next_mine + kBar.size());
  }
  const std::string_view a = theirs.substr(0, theirs.find(kBar));
  const std::string_view b = mine.substr(0, mine.find(kBar));
  std::size_t common = 0;
  while (common < a.size() && common < b.size() && a[common] == b[common]) ++common;
  if (common > kShown / 2) {
    from = common;
    while (from > 0 && a[from - 1] != ' ') --from;
    // A long word (a digest) that parts late: shown from within it, so
    // the difference is in what is shown.
    if (common - from > kShown / 2) from = common - kShown / 2;
  }
  return "packed with '" + part(theirs) + "', here '" + part(mine) + "'";
}

// Whether `listed` names `compiler` but for the name its input file is
// given (a command's identity ends its id with it: "<id> | <command> |
// x.cl"): the same toolchain, that compiled other sources. Its keys are
// another request's, so a miss is silent, not "another toolchain".
bool same_command_but_input(std::string_view listed, const CompilerIdentity& compiler) {
  constexpr std::string_view kBar = " | ";
  const auto last = compiler.id.rfind(kBar);
  if (compiler.backend != "command" || last == std::string::npos) return false;
  const std::string head = compiler.backend + std::string(kBar) + compiler.id.substr(0, last + 3);
  const std::string tail = std::string(kBar) + compiler.version;
  if (listed.size() < head.size() + tail.size() || !listed.starts_with(head) ||
      !listed.ends_with(tail)) {
    return false;
  }
  const std::string_view input =
      listed.substr(head.size(), listed.size() - head.size() - tail.size());
  return !input.empty() && input.find(kBar) == std::string_view::npos;
}

}  // namespace

std::string identity_text(const CompilerIdentity& compiler) {
  return compiler.backend + " | " + compiler.id + " | " + compiler.version;
}

std::optional<std::string> unfit_reason(const Fields& metadata, std::string_view db,
                                        const CompilerIdentity& compiler) {
  std::vector<std::string_view> compilers;
  for (const auto& [name, value] : metadata) {
    // Found as its own database, or as the arch-wide one of its arch.
    if (name == "db" && value != db && !value.starts_with(std::string(db) + "_")) {
      return "it holds kernels for " + value + ", not " + std::string(db) +
             " (renamed? kcache install names it)";
    }
    if (name == "key_format" && value != std::to_string(kKeySchemaVersion)) {
      return "it was packed with key format " + value + ", and this kcache uses " +
             std::to_string(kKeySchemaVersion) + " (repack it with this kcache)";
    }
    if (name == "entry_format" && value != std::to_string(kEntryFormatVersion)) {
      return "its entries are in format " + value + ", and this kcache reads " +
             std::to_string(kEntryFormatVersion) + " (repack it with this kcache)";
    }
    if (name == "compiler") compilers.push_back(value);
  }
  // An older package does not say; an empty identity asks for the rest only.
  if (compilers.empty() || compiler.backend.empty()) return std::nullopt;
  const std::string mine = identity_text(compiler);
  std::optional<std::string_view> same_backend;
  for (std::string_view listed : compilers) {
    if (listed == mine || same_command_but_input(listed, compiler)) return std::nullopt;
    if (!same_backend && listed.starts_with(compiler.backend + " | ")) same_backend = listed;
  }
  if (!same_backend) {
    return "it holds no " + compiler.backend + " kernels (packed for " +
           std::string(compilers.front().substr(0, compilers.front().find(" | "))) + ")";
  }
  return "it was packed by another " + compiler.backend + " toolchain (" +
         first_difference(*same_backend, mine) + "); repack it with kcache pack for this one";
}

}  // namespace kcache
