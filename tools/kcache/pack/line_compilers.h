// The compilers a pack's lines are compiled with, each made once in a
// process and run from its line's folder, and the checks made of them
// before any compile.
#pragma once

#include <kcache/compiler.h>

#include <map>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "pack/recorded_lines.h"

namespace kcache::tool {

// While it lives, this process works from `folder` when one is given and
// is here; then it goes back to the folder it was in.
class InFolder {
 public:
  explicit InFolder(const std::string& folder);
  ~InFolder();
  InFolder(const InFolder&) = delete;
  InFolder& operator=(const InFolder&) = delete;

 private:
  int back_ = -1;  // the folder it came from, open; -1 when it did not move
};

// Runs `work` from `folder` when one is given and is here, then goes back
// to the folder the pack runs in: a manifest line is keyed and compiled
// from where its program ran, so that its relative include folders, and
// the working folder PoCL and NVRTC search, are found as the program found
// them. Jobs are processes, each on one line at a time: the working folder
// is the line's alone.
template <typename Work>
auto from_folder(const std::string& folder, Work&& work) {
  InFolder here(folder);
  return work();
}

// The compilers of a process, one per config (config_name), and for the
// command backend one per folder.
using LineCompilers = std::map<std::string, std::unique_ptr<Compiler>>;

// The compiler `line` is compiled with, made on first use, from the line's
// folder as its compiles are: a command's program and the files its
// command line names, when relative (`./cc.sh {in} {out}`), are the ones
// where the program ran, so a command's compiler is kept per folder.
Result<Compiler*> compiler_for(const Line& line, const CompilerConfig& config,
                               LineCompilers& compilers);

// The programs and libraries the compilers of `lines` run or load (each
// found from its line's folder, as its compiles are) that another user
// could have written or replaced, each once with the first line that
// runs it and why: a manifest's lines are commands, run as the user who
// packs. Asked before any compiler is made (making one may load a library
// or stat a program).
std::vector<std::string> untrusted_compilers(const std::vector<Line>& lines,
                                             const CompilerConfig& config);

// Why the runtime of `line`'s backend cannot take its target: OpenCL
// compiles for this machine's device alone, which only its runtime names,
// and an NVRTC knows the archs it supports (sm_9000 is named like one;
// target_misfit tells an AMD arch for NVRTC and such by the name, loading
// nothing). Asked once a backend, before any folder is made or worker
// started: that backend's lines are then left out (and when no line is
// left, the target is a usage error). nullopt when it fits or when the
// runtime cannot say (the workers then say why). For HIP, comgr's list of
// the archs it knows is asked (kUnavailable when the target is not on
// it), never hipRTC, which may abort its process on some archs: its
// workers compile.
std::optional<std::string> runtime_misfit(const Line& line, const CompilerConfig& config,
                                          LineCompilers& compilers);

// A --command given to pack whose program is a relative path (`./cc.sh
// {in} {out}`) names the file where pack runs, not one in each line's
// recorded folder: made absolute (a recorded command is left as it was
// recorded, and found from its line's folder: compiler_for).
std::string command_from_here(const std::string& command);

}  // namespace kcache::tool
