#include "core/compile_step.h"

#include <chrono>
#include <exception>

#include "core/kernel_of_entry.h"

namespace kcache {

namespace {

// Runs the compiler; nothing it throws (a warmup callback, say) escapes.
Result<CompileOutput> run_compiler(Compiler& compiler, const KernelRequest& request,
                                   const Target& target) {
  try {
    return compiler.compile(request, target);
  } catch (const std::exception& e) {
    return Status::internal(std::string("the compiler threw: ") + e.what());
  } catch (...) {
    return Status::internal("the compiler threw an unknown exception");
  }
}

}  // namespace

Result<Compiled> compile_entry(const KernelRequest& request, Compiler& compiler,
                               const Target& target, const Keyed* keyed, const Env& env,
                               StatsCounters& stats) {
  const std::int64_t started_ns = wall_clock_ns();
  const auto started = std::chrono::steady_clock::now();
  auto output = run_compiler(compiler, request, target);
  const auto micros =
      static_cast<std::uint64_t>(std::chrono::duration_cast<std::chrono::microseconds>(
                                     std::chrono::steady_clock::now() - started)
                                     .count());
  stats.add(Stat::kCompileMicros, micros);
  if (!output) {
    stats.add(Stat::kCompileFailures);
    return output.status();
  }
  stats.add(Stat::kCompiles);
  Compiled compiled;
  Entry& entry = compiled.entry;
  if (keyed != nullptr) {
    entry.key = keyed->key;
    entry.material = keyed->material;
  }
  entry.created_unix = env.now_unix();
  entry.metadata = std::move(output->metadata);
  // What a hit on this entry saves (kcache stats).
  entry.metadata.emplace_back(kCompileMicrosField, std::to_string(micros));
  compiled.unstorable = output->not_cacheable;
  compiled.files_read = std::move(output->files_read);
  compiled.started_ns = started_ns;
  entry.storage = ByteBuffer::copy_of(output->binary);
  entry.payload_size = output->binary.size();
  compiled.kernel = kernel_from(entry, TierKind::kCompiled, target, target.db_basename());
  compiled.kernel.compile_log = std::move(output->log);
  return compiled;
}

bool reads_files_on_disk(const Keyed& keyed) {
  const std::string_view material = keyed.material.view();
  return material.find("\nheader ") != std::string_view::npos ||
         material.find("\nheaders.scan ") != std::string_view::npos;
}

bool inputs_changed(const KernelRequest& request, const Compiler& compiler, const Target& target,
                    const Keyed& keyed, const KeyedFiles& before, KeyedFiles& rechecked,
                    const Env& env, KeyMemo& memo) {
  if (!reads_files_on_disk(keyed)) return false;
  auto again = build_key_text(request, compiler, target, env, &memo, &rechecked);
  if (!again || again->key() != keyed.key) return true;
  if (rechecked.probes.size() != before.probes.size()) return true;
  for (std::size_t i = 0; i < before.probes.size(); ++i) {
    const ScanProbe& a = before.probes[i];
    const ScanProbe& b = rechecked.probes[i];
    if (a.path != b.path || a.stamp.has_value() != b.stamp.has_value() ||
        (a.stamp && !(*a.stamp == *b.stamp))) {
      return true;
    }
  }
  return false;
}

}  // namespace kcache
