// An Env that fails chosen operations, for fault-injection tests: ENOSPC on
// writes, EACCES on mkdir, EIO on reads, a missing HOME, set variables.
#pragma once

#include <atomic>
#include <map>
#include <mutex>
#include <optional>
#include <string>

#include "env/env.h"

namespace kcache::testing {

class FaultEnv final : public EnvWrapper {
 public:
  FaultEnv() : EnvWrapper(Env::posix()) {}

  // Variables seen by kcache: only these (the real environment is hidden).
  std::map<std::string, std::string> vars;
  std::optional<std::string> home;  // nullopt: no home directory at all
  std::optional<Status> fail_writes;
  std::optional<Status> fail_mkdir;
  std::optional<Status> fail_reads;
  std::atomic<int> writes{0};

  std::optional<std::string> get_env(const std::string& name) const override {
    auto it = vars.find(name);
    if (it == vars.end()) return std::nullopt;
    return it->second;
  }
  std::optional<std::string> home_dir() const override { return home; }

  Result<ByteBuffer> read_file(const std::string& path) const override {
    if (fail_reads) return *fail_reads;
    return EnvWrapper::read_file(path);
  }
  Status write_file_atomic(const std::string& path, std::span<const std::uint8_t> data, bool sync,
                           mode_t mode) override {
    ++writes;
    if (fail_writes) return *fail_writes;
    return EnvWrapper::write_file_atomic(path, data, sync, mode);
  }
  Status create_dirs(const std::string& path, mode_t mode) override {
    if (fail_mkdir) return *fail_mkdir;
    return EnvWrapper::create_dirs(path, mode);
  }
};

}  // namespace kcache::testing
