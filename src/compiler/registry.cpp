#include "compiler/registry.h"

namespace kcache {

const CompilerInputs& Compiler::inputs() const {
  static const CompilerInputs generic;
  return generic;
}

}  // namespace kcache
