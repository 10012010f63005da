#include "support/failure_report.h"

#include <iostream>

namespace kcache::tool {

int report_failure(const std::string& text) {
  std::cerr << "kcache: " << text << "\n";
  return 1;
}

std::string with_path_named(const std::string& path, const std::string& message) {
  // The path as a word of its own: "cannot open <path>: ...", not "a"
  // within "cannot".
  const auto apart = [](char c) { return c == ' ' || c == ':' || c == '(' || c == ')'; };
  for (std::size_t at = message.find(path); at != std::string::npos;
       at = message.find(path, at + 1)) {
    const std::size_t end = at + path.size();
    if ((at == 0 || apart(message[at - 1])) && (end == message.size() || apart(message[end]))) {
      return message;
    }
  }
  return path + ": " + message;
}

}  // namespace kcache::tool
