// A shared library loaded at run time (vendor runtimes: libOpenCL, libnvrtc,
// libamdhip64), so that kcache has no link-time dependency on any of them.
#pragma once

#include <kcache/status.h>

#include <memory>
#include <string>
#include <vector>

namespace kcache {

class DynamicLibrary {
 public:
  // Tries each name (or path) in turn, with dlopen's search rules.
  // kUnavailable, naming every candidate and dlerror's text, when none loads.
  static Result<std::shared_ptr<DynamicLibrary>> open(const std::vector<std::string>& names);
  ~DynamicLibrary();
  DynamicLibrary(const DynamicLibrary&) = delete;
  DynamicLibrary& operator=(const DynamicLibrary&) = delete;

  // The address of `symbol`, or nullptr.
  [[nodiscard]] void* find(const char* symbol) const;
  // Binds `symbol` into `out`; kUnavailable when it is missing.
  template <class Function>
  Status bind(const char* symbol, Function*& out) const {
    out = reinterpret_cast<Function*>(find(symbol));
    if (out == nullptr) return Status::unavailable(name_ + " has no symbol " + symbol);
    return Status::ok();
  }
  [[nodiscard]] const std::string& name() const { return name_; }
  // The file the library was loaded from (dladdr), or its name when unknown.
  [[nodiscard]] std::string path() const;

 private:
  DynamicLibrary(void* handle, std::string name) : handle_(handle), name_(std::move(name)) {}
  void* handle_;
  std::string name_;
};

}  // namespace kcache
