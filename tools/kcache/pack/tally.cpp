#include "pack/tally.h"

#include <algorithm>

namespace kcache::tool {

std::string PackTally::record(const Outcome& outcome, const Line& line) {
  if (outcome.kind == Outcome::Kind::kReused) finding_seconds += outcome.seconds;
  if (outcome.kind == Outcome::Kind::kCompiled || outcome.kind == Outcome::Kind::kFailed) {
    compiling_seconds += outcome.seconds;
  }
  if (outcome.kind == Outcome::Kind::kFailed || outcome.kind == Outcome::Kind::kNoCompiler) {
    ++failures;
    no_compiler += outcome.kind == Outcome::Kind::kNoCompiler ? 1 : 0;
    auto alike = std::find_if(failed.begin(), failed.end(),
                              [&](const auto& f) { return f.first == outcome.message; });
    if (alike == failed.end()) alike = failed.insert(failed.end(), {outcome.message, {}});
    alike->second.push_back(line.number);
    return "failed: " + outcome.message.substr(0, outcome.message.find('\n'));
  }
  // Lines alike otherwise than same_kernel finds (another spelling of one
  // request) come to one key: packed once, the others counted as repeats.
  if (auto [first, inserted] = line_of_key_.try_emplace(outcome.key_hex, line.number); !inserted) {
    ++repeats;
    return "is the same kernel as line " + std::to_string(first->second);
  }
  dbs.insert(outcome.db);
  if (auto key = CacheKey::from_hex(outcome.key_hex)) packed.push_back(*key);
  keyed_anew += outcome.keyed_anew ? 1 : 0;
  const bool was_compiled = outcome.kind == Outcome::Kind::kCompiled;
  (was_compiled ? compiled : reused) += 1;
  // Built before: by an interrupted pack, or taken from the user cache.
  return was_compiled ? "compiled" : "already built";
}

}  // namespace kcache::tool
