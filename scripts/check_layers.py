#!/usr/bin/env python3
"""Checks that no include in src/ runs up the layers (docs/design.md, "Layers").

Each folder of src/ has a floor; a file may include its own folder's
headers and those of folders on lower floors, never a higher or a
sibling one. The facade's public header, <kcache/cache.h>, is for the
floors above the tiers only. Prints each include that breaks a rule and
exits 1; exits 0 when there is none.

Usage: check_layers.py [SRC_DIR]   (default: src/ beside this script)
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
    ["compiler", "store"],  # the compilers; the tiers
    ["core"],               # the facade: policy, config, stats, packages
    ["cuda", "c_api", "layers"],  # over the facade; layers: drop-in libraries
]
FACADE = "kcache/cache.h"
FACADE_USERS = {"core", "cuda", "c_api", "layers"}

INCLUDE = re.compile(r'^\s*#\s*include\s*([<"])([^">]+)[">]')


def main() -> int:
    src = pathlib.Path(sys.argv[1]) if len(sys.argv) > 1 else (
        pathlib.Path(__file__).resolve().parent.parent / "src")
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
                if name == FACADE and own not in FACADE_USERS:
                    problems.append(f"{path}:{number}: {own}/ includes the facade <{name}>")
                continue
            target = name.split("/")[0]
            if target not in floor or target == own:
                continue
            if floor[target] >= floor[own]:
                kind = "a sibling" if floor[target] == floor[own] else "a higher"
                problems.append(f"{path}:{number}: {own}/ includes {kind} floor's \"{name}\"")
    for problem in problems:
        print(problem)
    if problems:
        print(f"{len(problems)} include(s) run up the layers (docs/design.md, \"Layers\")")
        return 1
    print(f"layers hold in {src}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
