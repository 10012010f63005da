// kcache pack: compile every kernel of a manifest (KCACHE_RECORD's, docs/
// formats.md §4) for one target, in parallel, into a read-only package.
//
// It compiles through a cache of its own whose user tier, in the work
// folder (`--work`, default <output>.pack), is the resume store: a pack run
// again compiles only what it had not stored. The package is written from
// that tier whole, then renamed into place. A line that does not parse or
// a kernel that fails is reported and skipped; the package still holds the
// others and the exit status is 1.
//
// Three steps, each in pack/: plan (read and check, choose the lines, open
// the work folder's cache), compile (in jobs, processes of this program
// run as workers), write (the package and the summary).
#include <kcache/compiler.h>

#include <memory>

#include "commands/commands.h"
#include "pack/compile_lines.h"
#include "pack/options.h"
#include "pack/plan.h"
#include "pack/workers.h"
#include "pack/write_package.h"
#include "support/compiler_flags.h"
#include "support/option_checks.h"

namespace kcache::tool {
namespace {

int run_pack(PackOptions options) {
  options.command_line = tool_arguments();
  if (options.is_worker()) end_with_parent(options.worker_of);
  PackPlan plan;
  if (int status = plan_pack(options, plan); status != 0) return status;
  // A worker compiles the lines it is handed and says what became of each.
  if (options.is_worker()) return serve_as_worker(plan);
  CompiledLines compiled = compile_lines(options, plan);
  return write_package(options, plan, compiled);
}

}  // namespace

Runner add_pack_command(CLI::App& app) {
  auto args = std::make_shared<PackOptions>();
  CLI::App* cmd = app.add_subcommand(
      "pack", "Compile every kernel of a manifest (KCACHE_RECORD) for a target into a package");
  cmd->add_option("--manifest", args->manifest, "The manifest (JSON lines)")
      ->required()
      ->check(names_a_path());
  cmd->add_option("--target", args->target, "Target, e.g. sm_90_132, gfx90a, or the OpenCL arch")
      ->required();
  cmd->add_option("--output", args->output, "The package to write, <db>.kdb")->required();
  cmd->add_option("--work", args->work,
                  "Folder of the pack's own cache, kept to resume (default: <output>.pack)")
      ->check(names_a_path());
  cmd->add_option("--jobs,-j", args->jobs,
                  "Kernels compiled at once (default, or 0: one per core; at most 4 a core)");
  cmd->add_option("--backend", args->backend, "Only the manifest's kernels of this backend")
      ->check(CLI::IsMember(compiler_backends()));
  add_compiler_flags(cmd, args->compiler, " (default: the recorded one)");
  cmd->add_option("--input-name", args->input_name,
                  "command backend: file name {in} gets (default: the recorded one)");
  cmd->add_option("--sign", args->sign, "Sign the package with this private key (kcache keygen)")
      ->check(names_a_path());
  cmd->add_flag("--trust-manifest", args->trust_manifest,
                "Pack the manifest even when another user could have written it (its lines are "
                "commands pack runs as you)");
  cmd->add_flag("--trust-compiler", args->trust_compiler,
                "Run the compilers the manifest names even when another user could have "
                "replaced their programs or libraries");
  cmd->add_flag("--from-cache", args->from_cache,
                "Take the kernels the user cache already holds for this target instead of "
                "compiling them");
  // Hidden: how a pack runs its jobs (pack/workers.h).
  cmd->add_option("--worker-of", args->worker_of)->group("");
  cmd->add_option("--leave-out-backend", args->leave_out)->group("");
  return [args] { return run_pack(*args); };
}

}  // namespace kcache::tool
