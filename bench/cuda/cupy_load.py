#!/usr/bin/env python3
"""CuPy's warm kernel cache on the kernels of cuda_load_bench, one process.

    cupy_load.py --dir D --set small|big

Prints "cupy <set> <id> <microseconds>" per kernel: the time from
cupy.RawModule(code=...) to a function (CuPy hashes the source and options,
reads its cache file, loads the module). CUPY_CACHE_DIR decides cold or warm.
"""
import argparse
import pathlib
import sys
import time

import cupy


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--dir", required=True)
    parser.add_argument("--set", required=True)
    args = parser.parse_args()
    root = pathlib.Path(args.dir)
    kernels = []
    for line in (root / "kernels.txt").read_text().splitlines():
        kid, kset = line.split()
        if kset != args.set:
            continue
        source = (root / "src" / f"{kid}.cu").read_text()
        names = [n for n in (root / "src" / f"{kid}.names").read_text().splitlines() if n]
        kernels.append((kid, source, names))
    cupy.zeros(1)  # the context, outside the timing
    for kid, source, names in kernels:
        templated = "<" in names[0]
        start = time.perf_counter()
        module = cupy.RawModule(code=source, options=("-std=c++17",),
                                name_expressions=names if templated else None)
        module.get_function(names[0])
        elapsed = (time.perf_counter() - start) * 1e6
        print(f"cupy {args.set} {kid} {elapsed:.2f}", flush=True)


if __name__ == "__main__":
    sys.exit(main())
