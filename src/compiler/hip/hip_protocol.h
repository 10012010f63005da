// What the hip backend and its worker process (kcache-hip-worker) say to
// each other, through files in a private temporary folder.
//
// hipRTC aborts the process on some targets (ROCm 5.2 on gfx1100), and
// comgr cannot share a process with another LLVM-based runtime (PoCL): its
// command-line options collide and LLVM aborts. So the library never loads
// either; every hipRTC call runs in the worker:
//
//   kcache-hip-worker probe   FOLDER   which library loads, versions, ISAs
//   kcache-hip-worker compile FOLDER   one hipRTC compile
//
// The caller writes FOLDER/request, the worker writes FOLDER/result (through
// a rename, so a result is whole or absent) and exits 0; FOLDER/tmp is the
// worker's TMPDIR, so whatever comgr leaves behind (a crash leaves its
// comgr-* folder) goes when the caller removes FOLDER. Any other exit, or
// death by a signal, means the worker failed; its stdout and stderr are
// the caller's to capture.
//
// Both files are a list of records, each "<name> <byte count>\n<bytes>\n":
// binary-safe, repeatable names, order kept.
//
// Request fields:
//   protocol         kHipProtocolVersion (the worker refuses any other)
//   library          a libamdhip64 to try (path or soname); repeated, in order
//   source           compile: the program text
//   option           compile: one hipRTC option, in order
//   header_name      compile: an in-memory header's include name, followed by
//   header_content   its text
//   name_expression  compile: a kernel name expression to lower
// Result fields:
//   status           "ok", "compile_error", "invalid_argument", "unavailable"
//                    or "internal"
//   message          one line, when status is not "ok"
//   probe:   library_path, library_bytes, hiprtc_version, comgr_path,
//            comgr_bytes, comgr_version (empty when comgr was not found),
//            isa (repeated: "<processor>[ <feature>...]", e.g.
//            "gfx906 sramecc xnack", the target-id features it takes)
//   compile: log, code (the code object), lowered (repeated:
//            "<lowered name> <name expression>")
#pragma once

#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

namespace kcache::hip {

// Part of every HIP key (the compiler identity's version): bump it when
// the worker changes what a compile gives (an option it adds, how it calls
// hipRTC), so that no binary of the old worker is served for the new.
inline constexpr std::string_view kHipProtocolVersion = "1";
inline constexpr const char* kRequestFile = "request";
inline constexpr const char* kResultFile = "result";
inline constexpr const char* kTempSubfolder = "tmp";

class Records {
 public:
  void add(std::string name, std::string value) {
    fields_.emplace_back(std::move(name), std::move(value));
  }
  // The first value named `name`, or nullopt.
  [[nodiscard]] std::optional<std::string> first(std::string_view name) const;
  // Every value named `name`, in order.
  [[nodiscard]] std::vector<std::string> all(std::string_view name) const;
  [[nodiscard]] const std::vector<std::pair<std::string, std::string>>& fields() const {
    return fields_;
  }

  [[nodiscard]] std::string encode() const;
  // nullopt when `bytes` is not a whole, well-formed list of records.
  static std::optional<Records> decode(std::string_view bytes);

 private:
  std::vector<std::pair<std::string, std::string>> fields_;
};

// Whole-file helpers; false/nullopt on any failure. write_file_atomic
// writes `path`.part and renames it over `path`.
bool write_file_atomic(const std::string& path, std::string_view bytes);
std::optional<std::string> read_file(const std::string& path);

}  // namespace kcache::hip
