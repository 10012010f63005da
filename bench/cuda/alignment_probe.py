#!/usr/bin/env python3
"""Whether cuModuleLoadData minds where an image lies: the paired-parts
phase of cuda_load_bench (the floor and kcache's system tier taking turns
in one process) with the floor's images K bytes into their buffers
(KCACHE_BENCH_FLOOR_OFFSET=K), for each K, in fresh processes taking
turns. A package's binaries lie at any offset (formats.md §1: the payload
follows the key material and the metadata); kcache's loads there took
0.9-1.6 us more than the floor's on the H100 host.

    alignment_probe.py --bench B --dir D [--offsets 0,1,8] [--processes 4]

D is a folder `cuda_load_bench gen` and `prepare` made (run_load_bench.py
leaves one in its --work). Prints, per set and offset, the medians over
processes of the per-process median load (floor and kcache) and where
kcache's images lay (address modulo 64).
"""
import argparse
import collections
import os
import statistics
import subprocess


def run(bench, folder, set_name, parity, offset):
    env = dict(os.environ, KCACHE_BENCH_FLOOR_OFFSET=str(offset))
    out = subprocess.run([bench, "measure", "--dir", folder, "--mode", "paired_parts_system",
                          "--set", set_name, "--parity", str(parity)],
                         env=env, check=True, capture_output=True, text=True).stdout
    parts = collections.defaultdict(list)
    for line in out.splitlines():
        fields = line.split()
        if len(fields) == 4 and fields[0].startswith("q"):
            parts[fields[0]].append(float(fields[3]))
    return parts


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--bench", required=True)
    parser.add_argument("--dir", required=True)
    parser.add_argument("--offsets", default="0,1,8")
    parser.add_argument("--processes", type=int, default=4)
    args = parser.parse_args()
    offsets = [int(o) for o in args.offsets.split(",")]
    print("| set | floor offset | floor load, us | kcache load, us | kcache / floor |"
          " kcache images by address % 64 |")
    print("|---|---|---|---|---|---|")
    for set_name in ("small", "big"):
        seen = {o: collections.defaultdict(list) for o in offsets}
        aligns = collections.Counter()
        for p in range(args.processes):
            for o in offsets:  # taking turns
                parts = run(args.bench, args.dir, set_name, p % 2, o)
                seen[o]["floor"].append(statistics.median(parts["qfloor_load"]))
                seen[o]["kcache"].append(statistics.median(parts["qkcache_load"]))
                aligns.update(int(a) for a in parts["qkcache_align"])
        shown = ", ".join(f"{a}: {n}" for a, n in sorted(aligns.items())[:8])
        for o in offsets:
            floor = statistics.median(seen[o]["floor"])
            kc = statistics.median(seen[o]["kcache"])
            print(f"| {set_name} | {o} | {floor:.1f} | {kc:.1f} | {kc / floor:.2f}x | {shown} |")


if __name__ == "__main__":
    main()
