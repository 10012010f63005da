#!/usr/bin/env python3
"""What the machine's cores give N processes of CPU-bound work, kcache aside.

    cpu_scaling.py [--processes 1,8,16] [--seconds 3]

Each process compresses the same buffer with zlib for a fixed number of
rounds (about --seconds on one core, measured first); the script times
1 process, then N at once, and prints the speed-up N * t1 / tN (N: ideal).
It is the ceiling for `kcache pack --jobs N` (bench/pack_jobs.py) on the
same machine: with SMT, two processes on one core's two threads share its
units, and the speed-up of N processes stays under N whatever kcache does.
"""
import argparse
import multiprocessing
import os
import time
import zlib

BUFFER = bytes((i * 2654435761) % 251 for i in range(256 << 10))


def work(rounds):
    for _ in range(rounds):
        zlib.compress(BUFFER, 6)


def timed(processes, rounds):
    start = time.perf_counter()
    procs = [multiprocessing.Process(target=work, args=(rounds,)) for _ in range(processes)]
    for p in procs:
        p.start()
    for p in procs:
        p.join()
    return time.perf_counter() - start


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--processes", default=f"1,{os.cpu_count() or 1}")
    parser.add_argument("--seconds", type=float, default=3.0)
    args = parser.parse_args()
    counts = sorted({1, *(int(n) for n in args.processes.split(",") if n)})
    start = time.perf_counter()
    work(5)
    per_round = (time.perf_counter() - start) / 5
    rounds = max(1, int(args.seconds / per_round))
    print(f"cpu_scaling: {rounds} rounds of zlib level 6 on 256 KiB per process, "
          f"{os.cpu_count()} logical CPUs")
    print("\n| processes | wall s | speed-up (N x t1 / tN) | ideal |")
    print("|---|---|---|---|")
    t1 = timed(1, rounds)
    for n in counts:
        wall = t1 if n == 1 else timed(n, rounds)
        print(f"| {n} | {wall:.2f} | {n * t1 / wall:.2f}x | {n}x |")


if __name__ == "__main__":
    main()
