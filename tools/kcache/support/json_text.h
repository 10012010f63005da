// JSON as the tool prints it. Paths, file names and a package's words may
// hold bytes that are not UTF-8 (a file name is any bytes but '/' and
// NUL): they are printed as U+FFFD, so the output stays valid JSON
// instead of an exception in place of it.
#pragma once

#include <nlohmann/json.hpp>

#include <string>

namespace kcache::tool {

// `value` as JSON text, indented by `indent` spaces (-1: on one line).
inline std::string json_text(const nlohmann::json& value, int indent = -1) {
  return value.dump(indent, ' ', /*ensure_ascii=*/false, nlohmann::json::error_handler_t::replace);
}

}  // namespace kcache::tool
