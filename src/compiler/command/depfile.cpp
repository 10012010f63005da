#include "compiler/command/depfile.h"

#include <set>

namespace kcache {

std::vector<std::string> depfile_prerequisites(std::string_view text) {
  std::vector<std::string> out;
  std::set<std::string> seen;
  std::string word;
  bool in_prerequisites = false;  // past this rule's ':'
  auto finish_word = [&] {
    if (word.empty()) return;
    if (in_prerequisites && seen.insert(word).second) out.push_back(word);
    word.clear();
  };
  for (std::size_t i = 0; i < text.size(); ++i) {
    const char c = text[i];
    if (c == '\\' && i + 1 < text.size()) {
      const char next = text[i + 1];
      if (next == '\n' || (next == '\r' && i + 2 < text.size() && text[i + 2] == '\n')) {
        finish_word();  // a continuation: a separator
        i += next == '\n' ? 1 : 2;
        continue;
      }
      if (next == ' ' || next == '#' || next == '\\' || next == ':') {
        word.push_back(next);
        ++i;
        continue;
      }
    }
    if (c == '$' && i + 1 < text.size() && text[i + 1] == '$') {
      word.push_back('$');
      ++i;
      continue;
    }
    if (c == '\n') {
      finish_word();
      in_prerequisites = false;  // a new rule
      continue;
    }
    if (c == ' ' || c == '\t' || c == '\r') {
      finish_word();
      continue;
    }
    if (c == ':' && !in_prerequisites &&
        (i + 1 == text.size() || text[i + 1] == ' ' || text[i + 1] == '\t' || text[i + 1] == '\n' ||
         text[i + 1] == '\r' || text[i + 1] == '\\')) {
      word.clear();  // the target
      in_prerequisites = true;
      continue;
    }
    word.push_back(c);
  }
  finish_word();
  return out;
}

}  // namespace kcache
