#!/usr/bin/env python3
"""How `kcache pack`'s hand-out of lines shapes a many-job pack, from real
compile times (issue 11). A model, not a measurement of N jobs: for a
machine with fewer cores than the jobs to model.

    pack_schedule_model.py --kcache BUILD/tools/kcache/kcache --manifest M
                           --target sm_90 [--backend nvrtc] [--workers 16]

Runs `kcache pack --jobs 1` on the manifest into a fresh work folder, takes
each kernel's compile time from the time between its progress lines, then
replays those times on W workers handed lines in manifest order: with one
line in hand per worker (as pack does) and with two (as it did), against
the ideal (the total over W). Prints the three wall times.
"""
import argparse
import heapq
import os
import subprocess
import sys
import tempfile
import time


def replay(durations, workers, in_hand):
    """Wall time of `durations` on `workers`, each holding up to `in_hand`
    lines (the one running included); a line goes to a worker with room."""
    queue = list(durations)
    held = [[] for _ in range(workers)]
    events = []  # (time the running line ends, worker)
    for w in range(workers):
        while len(held[w]) < in_hand and queue:
            held[w].append(queue.pop(0))
        if held[w]:
            heapq.heappush(events, (held[w][0], w))
    end = 0.0
    while events:
        now, w = heapq.heappop(events)
        end = max(end, now)
        held[w].pop(0)
        while len(held[w]) < in_hand and queue:
            held[w].append(queue.pop(0))
        if held[w]:
            heapq.heappush(events, (now + held[w][0], w))
    return end


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--kcache", required=True)
    parser.add_argument("--manifest", required=True)
    parser.add_argument("--target", required=True)
    parser.add_argument("--backend", default="nvrtc")
    parser.add_argument("--workers", type=int, default=16)
    args = parser.parse_args()
    env = dict(os.environ, CUDA_CACHE_DISABLE="1", POCL_KERNEL_CACHE="0",
               KCACHE_LOG_LEVEL="warning")
    with tempfile.TemporaryDirectory() as work:
        cmd = [args.kcache, "pack", "--manifest", args.manifest, "--target", args.target,
               "--output", os.path.join(work, "out.kdb"), "--work", os.path.join(work, "w"),
               "--jobs", "1", "--backend", args.backend]
        start = time.perf_counter()
        proc = subprocess.Popen(cmd, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE,
                                text=True)
        stamps = [time.perf_counter() - start for line in proc.stderr if " compiled" in line]
        if proc.wait() != 0 or not stamps:
            sys.exit(f"pack failed (exit {proc.returncode}): {' '.join(cmd)}")
    durations = [b - a for a, b in zip([0.0] + stamps, stamps)][1:]  # the first holds start-up
    total = sum(durations)
    ideal = total / args.workers
    one = replay(durations, args.workers, 1)
    two = replay(durations, args.workers, 2)
    print(f"{len(durations)} compiles, {total:.2f} s in all (median "
          f"{sorted(durations)[len(durations) // 2] * 1000:.0f} ms, longest "
          f"{max(durations) * 1000:.0f} ms); on {args.workers} workers:")
    print(f"  ideal (total / workers): {ideal:.3f} s")
    print(f"  one line in hand:        {one:.3f} s ({one / ideal - 1:+.1%})")
    print(f"  two lines in hand:       {two:.3f} s ({two / ideal - 1:+.1%})")


if __name__ == "__main__":
    main()
