// The paths a user names on the command line: files read with a bound,
// written without ever replacing (or writing through) what is not a
// regular file, and the folders made for them.
//
// Inputs (--source, each --header) must be regular files (a link to one is
// fine: it is the user's own path) of at most kMaxInputFileBytes; a FIFO,
// device or socket is refused before it is read, so /dev/zero or a FIFO
// with no writer cannot hang the tool or fill its memory.
//
// Outputs (compile --output, export -o) are written to a new temporary
// file beside them (O_CREAT | O_EXCL | O_NOFOLLOW, a random name), then
// renamed over the path (export's package is also synced). A path that
// exists and is not a regular file (a symbolic link, FIFO, device,
// socket, folder) is refused: kcache neither replaces it nor writes
// through it.
#pragma once

#include <kcache/status.h>
#include <sys/types.h>

#include <cstddef>
#include <cstdint>
#include <functional>
#include <span>
#include <string>
#include <string_view>

namespace kcache::tool {

// The largest --source or --header file: 64 MiB.
inline constexpr std::uint64_t kMaxInputFileBytes = 64ull << 20;
// The largest manifest (kcache pack): 1 GiB, a hundred thousand kernels
// of 10 KB.
inline constexpr std::uint64_t kMaxManifestBytes = 1ull << 30;

// The content of the regular file at `path`. `what` names it in messages
// ("--source k.cl"); a message reads "cannot read <what>: <why>", and
// one for a file over `max_bytes` names the files it bounds (`bounded`).
Result<std::string> read_input_file(const std::string& path, const std::string& what,
                                    std::uint64_t max_bytes = kMaxInputFileBytes,
                                    std::string_view bounded = "a source or header file");

// Whether `a` and `b` name one existing file (through links, or two
// names of one file).
bool same_file(const std::string& a, const std::string& b);

// Ok when a new file can be made in the folder `path` would be written
// to: a file is made there and removed (so a read-only folder, one the
// user cannot write, or a missing one is found before hours of work).
Status check_can_create(const std::string& path, const std::string& what);

// Ok when `path` may be written: it does not exist, or it is a regular file
// (lstat, so a link is refused even when it points at one). `what` names it
// in the message ("--output out.bin").
Status check_output_path(const std::string& path, const std::string& what);

// Removes the temporaries that writes of `path` killed before their rename
// left beside it (`.<name>.kcache-tmp-*`: the user's own regular files,
// not written to for a minute, that no writer holds locked); returns how
// many. Housekeeping: what cannot be looked at is passed over.
std::size_t remove_abandoned_outputs(const std::string& path);

// Writes `bytes` to `path` (check_output_path first, then a temporary file,
// rename; not synced unless `sync`, as a compiler's own output is not). On
// failure `path` is unchanged and no temporary is left. `mode`: the file's
// mode whatever the umask (0: as the umask makes it). `before_rename`, when
// given, is asked of the whole temporary file before it is renamed in (a
// check of what is about to be put in place); its error is returned as it
// is, and nothing is put in place.
Status write_output_file(
    const std::string& path, const std::string& what, std::span<const std::uint8_t> bytes,
    bool sync = false, mode_t mode = 0,
    const std::function<Status(const std::string& temporary)>& before_rename = nullptr);

// check_output_path for a package to be written at `path`: a file there
// must be a package (or empty) for it to be replaced, so that a mistyped
// --output never destroys another file (starts_as_package).
Status check_package_output(const std::string& path, const std::string& what);

// Makes the folder `path` and the missing folders above it, each with
// `mode` whatever the umask (a system folder made under umask 0 must not
// be one that others can write: the system tier would refuse what is in
// it). Folders already there are left as they are.
Status make_folders(const std::string& path, mode_t mode);

}  // namespace kcache::tool
