// Reading back what an external compiler wrote, without trusting it.
//
// A compiler run by the command backend is a program kcache does not
// control: it may leave a FIFO at {out} (a plain read would wait for a
// writer for ever), a symbolic link to /dev/zero (a read that never ends),
// a folder, an empty file, or gigabytes. These functions never block, never
// follow a link and never read more than a bound, so a hostile or broken
// compiler costs at most that bound, not a hang past --timeout.
#pragma once

#include <kcache/status.h>

#include <chrono>
#include <cstdint>
#include <string>
#include <vector>

namespace kcache {

// The largest binary a compiler may hand back: 1 GiB. GPU code objects are
// kilobytes to a few hundred megabytes; more is a compiler gone wrong.
inline constexpr std::uint64_t kMaxCompilerOutputBytes = 1ull << 30;

// The most of a compiler's log (its stdout and stderr) that is kept: 16 MiB.
inline constexpr std::uint64_t kMaxCompilerLogBytes = 16ull << 20;

// The whole of the file a compiler left at `path` (its {out}).
//
// The file is opened with O_NOFOLLOW | O_NONBLOCK and accepted only if
// fstat shows a regular file, so the call never blocks on a FIFO or a
// device and never reads through a link. It returns:
//  - the bytes, when `path` is a regular file of 1 to `max_bytes` bytes;
//  - kCompileError when there is no file, when it is not a regular file (a
//    FIFO, a character or block device, a socket, a folder, a symbolic link:
//    the message says which, and where a link points), when it is empty,
//    or when it holds more than `max_bytes` (also if it grows past that
//    while being read);
//  - kTimeout when it is still being read at `deadline` (checked between
//    reads of 8 MiB, so a file smaller than that is never late);
//  - kIoError when it cannot be opened for another reason or a read fails.
//
// message() is a phrase meant to follow the compiler's name and "exited 0
// but", e.g. "wrote an empty output file ({out})"; the caller adds the
// name and the compiler's log:
//   Status::compile_error(argv[0] + " exited 0 but " + s.message(), log)
// for kCompileError, and keeps the code of the others.
//
// Thread-safe; it touches nothing but `path`.
Result<std::vector<std::uint8_t>> read_compiler_output(
    const std::string& path, std::uint64_t max_bytes = kMaxCompilerOutputBytes,
    std::chrono::steady_clock::time_point deadline = std::chrono::steady_clock::time_point::max());

// What a compiler printed, captured in the file at `path`, for a log: never
// blocks, never follows a link, keeps at most `max_bytes` (and then says
// that the rest was cut). A missing file gives ""; a file that is not a
// regular one, or cannot be read, gives one line saying so instead of its
// content. Thread-safe.
std::string read_compiler_log(const std::string& path,
                              std::uint64_t max_bytes = kMaxCompilerLogBytes);

}  // namespace kcache
