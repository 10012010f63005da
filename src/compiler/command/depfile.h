// The Make rules a compiler writes with -MD -MF FILE: what it read.
#pragma once

#include <string>
#include <string_view>
#include <vector>

namespace kcache {

// The prerequisites of every rule in `text`, in order, without repeats:
// line continuations joined, "\ " and "\#" unescaped, "$$" read as "$",
// the targets (what precedes each rule's ':') left out. gcc, clang and
// nvcc write this form.
std::vector<std::string> depfile_prerequisites(std::string_view text);

}  // namespace kcache
