#!/usr/bin/env python3
"""Checks that no include in src/ or tools/ runs up the layers
(docs/design.md §12, "Layers and folders").

Each folder of src/ has a floor; a file may include its own folder's
headers and those of folders on lower floors, never a higher or a
sibling one. The facade's public headers, <kcache/cache.h> and
<kcache/advanced.h>, are for the facade itself (core/cache*) and the floors above it: a helper takes the
value types from their own headers (kernel.h, stats.h, admin.h). The
tools stand on top: they link only the public library, so besides
public headers and their own they may include only header-only headers
of src/ (one with no .cpp beside it, nothing to link). Prints each
include that breaks a rule and exits 1; exits 0 when there is none.

Usage: check_layers.py [SRC_DIR [TOOLS_DIR]]
       (default: src/ and tools/ beside this script; TOOLS_DIR may be absent)
"""
import pathlib
import re
import sys

# Lowest first. Folders on one floor do not include each other.
FLOORS = [
    ["base"],               # status, keys, hashing, field text, log, buffers
    ["env"],                # the operating system: files, locks, mappings, processes
    ["format"],             # what is on disk: entries, .kdb files, compression
    ["inputs", "sign"],     # what a compile reads; package signatures
    ["compiler", "store", "key"],  # the compilers; the tiers; key derivation
    ["package", "upkeep"],  # packages and recording; stats, gc, failures
    ["core"],               # the facade and its lookup policy, config
    ["cuda", "c_api", "layers"],  # over the facade; layers: drop-in libraries
]
FACADE = {"kcache/cache.h", "kcache/advanced.h"}
FACADE_USERS = {"cuda", "c_api", "layers"}
# Inside core/, the facade's own files (the class and its Impl).
FACADE_FILES = {"core/cache.cpp", "core/cache_internal.h", "core/cache_admin.cpp",
                "core/cache_parts.h", "core/prepared_state.h"}

INCLUDE = re.compile(r'^\s*#\s*include\s*([<"])([^">]+)[">]')


def check_tools(src: pathlib.Path, tools: pathlib.Path) -> list:
    """Includes of src/ headers by the tools: header-only ones alone."""
    problems = []
    for path in sorted(tools.rglob("*")):
        if path.suffix not in (".h", ".cpp") or not path.is_file():
            continue
        for number, line in enumerate(path.read_text(errors="replace").splitlines(), 1):
            match = INCLUDE.match(line)
            if not match or match.group(1) != '"':
                continue
            name = match.group(2)
            if (path.parent / name).is_file() or (tools / name).is_file():
                continue  # the tool's own
            header = src / name
            if not header.is_file():
                continue  # a system or generated header
            if header.with_suffix(".cpp").is_file():
                problems.append(f"{path}:{number}: the tool includes \"{name}\", "
                                f"whose {header.with_suffix('.cpp').name} it does not link")
    return problems


def main() -> int:
    root = pathlib.Path(__file__).resolve().parent.parent
    src = pathlib.Path(sys.argv[1]) if len(sys.argv) > 1 else root / "src"
    tools = pathlib.Path(sys.argv[2]) if len(sys.argv) > 2 else (
        root / "tools" if len(sys.argv) <= 1 else None)
    floor = {folder: i for i, folders in enumerate(FLOORS) for folder in folders}
    problems = []
    for path in sorted(src.rglob("*")):
        if path.suffix not in (".h", ".cpp") or not path.is_file():
            continue
        own = path.relative_to(src).parts[0]
        if own not in floor:
            problems.append(f"{path}: folder '{own}' has no floor in scripts/check_layers.py")
            continue
        for number, line in enumerate(path.read_text(errors="replace").splitlines(), 1):
            match = INCLUDE.match(line)
            if not match:
                continue
            bracket, name = match.groups()
            if bracket == "<":
                inside = path.relative_to(src).as_posix()
                if name in FACADE and own not in FACADE_USERS and inside not in FACADE_FILES:
                    problems.append(f"{path}:{number}: {own}/ includes the facade <{name}>")
                continue
            target = name.split("/")[0]
            if target not in floor or target == own:
                continue
            if floor[target] >= floor[own]:
                kind = "a sibling" if floor[target] == floor[own] else "a higher"
                problems.append(f"{path}:{number}: {own}/ includes {kind} floor's \"{name}\"")
    if tools is not None and tools.is_dir():
        problems += check_tools(src, tools)
    for problem in problems:
        print(problem)
    if problems:
        print(f"{len(problems)} include(s) run up the layers (docs/design.md §12)")
        return 1
    print(f"layers hold in {src}" + (f" and {tools}" if tools is not None else ""))
    return 0


if __name__ == "__main__":
    sys.exit(main())
