// What a backend learned about its compiler's build (identity, targets,
// toolkit folders), kept in a small file so that a later process knows it
// without loading the compiler: a program whose requests all hit never
// loads libnvrtc (issue 10: "process ready" was ~9 ms, mostly its dlopen).
//
// A record names the files its facts were learned from (the library, its
// builtins, the toolkit folders) with their stamps (device, inode, size,
// mtime, ctime), and is used only while every stamp is unchanged: a new
// build of any of them is a new record. It is one file,
// <dir>/<name>.facts, written whole (a temporary file, then rename), with
// an XXH3-128 of its text as its last line; a damaged or foreign file is
// no record. Records are an optimisation: any failure to read or write one
// only means the compiler is loaded.
#pragma once

#include <optional>
#include <string>
#include <vector>

#include "base/field_text.h"
#include "env/env.h"

namespace kcache {

struct CompilerFacts {
  Fields facts;
  // Files (or folders) whose stamps vouch for the facts.
  std::vector<std::string> files;
};

// The record `name` in `dir` when present, intact and still true (every
// file's stamp unchanged); nullopt otherwise.
std::optional<CompilerFacts> load_compiler_facts(const std::string& dir, const std::string& name,
                                                 const Env& env);

// Writes the record, with the stamps the files have now; a file that
// cannot be looked at makes no record. Never fails loudly.
void store_compiler_facts(const std::string& dir, const std::string& name,
                          const CompilerFacts& facts, Env& env);

// The value of the first fact `name`, or nullopt.
std::optional<std::string> fact(const CompilerFacts& facts, std::string_view name);

// "<size> <mtime ns> <ctime ns> <device>:<inode>" of what `path` names
// (links followed); empty when it cannot be looked at. For identities.
std::string stamp_text(const std::string& path, const Env& env);

// "sha256:<hex>" of what each file is (build_parts.h: an ELF's build-id, a
// file's bytes, a folder's listing; links resolved, each file once, in
// order): a compiler's build in a few bytes of every key, the same on
// every machine with that build (no path, inode or time in it). A file
// that cannot be looked at counts as such.
std::string build_fingerprint(const std::vector<std::string>& files, const Env& env);

}  // namespace kcache
