#!/usr/bin/env python3
"""`kcache pack` of many kernels with --jobs 1 against --jobs N (issue 11).

    pack_jobs.py --kcache BUILD/tools/kcache/kcache --backend nvrtc|opencl
                 [--target sm_90] [--kernels 500] [--jobs 1,N] [--repeat 2]
                 [--processes] [--lib-path DIR:DIR] [--work DIR] [--keep]

It writes a manifest (docs/formats.md §4) of --kernels distinct kernels:
tiled GEMMs, direct convolutions, reductions, 2-D stencils, transposes,
row softmaxes and fused element-wise chains, each family varied in tile
sizes, unrolling, element types and operations, so that every line is its
own compile of real work (the same generator gives CUDA C++ for NVRTC and
OpenCL C for PoCL). Then every timed run is
    kcache pack --manifest M --target T --output X.kdb --work W --jobs J
with a fresh W and X (pack resumes from W: a second run into one W would be
all hits); each run must report every kernel compiled. The compilers' own
caches are off and fresh (CUDA_CACHE_DISABLE=1 and a new CUDA_CACHE_PATH:
NVRTC 13 can keep its PTX->SASS step in the driver's cache; POCL_KERNEL_CACHE=0
and a new POCL_CACHE_DIR). The job counts take turns within each repeat.

With --processes it also times the manifest split in N parts packed by N
`kcache pack --jobs 1` processes at once (the wall time until the last one
ends): what N compilers do when nothing in one process is shared, to tell a
lock inside the process from a machine that has no more to give. For every
run it prints the CPU time its processes used (user + sys) over the wall
time: about N cores busy when N compiles run, about 1 when they take turns;
and, on a VM, the share of the machine's CPU time its hypervisor took
meanwhile ("stolen", from /proc/stat), which no count of its processes shows.

Every package must hold the same keys (read from the .kdb index, formats.md
§2) and `kcache info --json` must give the same count and database.
Prints a table and, last, one line `PACK_JOBS_JSON {...}` for scripts.
Exit 1 when a run fails, does not compile everything, or the keys differ.
"""
import argparse
import hashlib
import json
import os
import pathlib
import re
import resource
import shutil
import statistics
import struct
import subprocess
import sys
import tempfile
import time

from pack_kernels import kernels
from process_states import StateSampler

# pack's last line (tools/kcache/pack/time_account.h: time_account).
TOOK = re.compile(r"took (?P<total>[0-9.]+) s: (?P<before>[0-9.]+) s before compiling, "
                  r"(?P<jobs>[0-9.]+) s in [0-9]+ jobs? \(their time: [0-9.]+ s compiling, "
                  r"[0-9.]+ s on lines already built or repeating another; "
                  r"(?:the first kernel done after (?P<first>[0-9.]+) s|none compiled)\), "
                  r"(?P<writing>[0-9.]+) s writing the package")


def write_manifest(path, backend, count):
    """A manifest of `count` lines (docs/formats.md §4). The `key` of each line
    is a placeholder made from the line (pack keys every line anew for its
    --target); no `target` or `compiler` is written, as no compile recorded
    them, so pack has no recorded key to compare."""
    dialect = "cuda" if backend in ("nvrtc", "hip") else "opencl"
    options = "-default-device" if backend == "nvrtc" else ""
    with open(path, "w", encoding="utf-8") as f:
        for _family, kernel, source in kernels(count, dialect):
            line = {"kcache_manifest": 1, "backend": backend, "options": options,
                    "kernel_names": [kernel], "include_dirs": [], "headers": [],
                    "key_headers": [], "source": source}
            line["key"] = hashlib.sha256(json.dumps(line, sort_keys=True).encode()).hexdigest()[:32]
            f.write(json.dumps(line, sort_keys=True) + "\n")


def split_manifest(path, parts, folder):
    lines = pathlib.Path(path).read_text(encoding="utf-8").splitlines(keepends=True)
    out = []
    for i in range(parts):
        part = folder / f"part{i}.jsonl"
        part.write_text("".join(lines[i::parts]), encoding="utf-8")
        out.append(part)
    return out


# --------------------------------------------------------------------------
# Running pack.

def kdb_keys(path):
    """The keys of a .kdb, from its index (docs/formats.md §2)."""
    with open(path, "rb") as f:
        data = f.read()
    if data[:8] != b"KCACHEDB":
        raise ValueError(f"{path}: not a kcache package")
    count, index = struct.unpack_from("<QQ", data, 16)
    return [data[index + 32 * i:index + 32 * i + 16].hex() for i in range(count)]


class Runner:
    def __init__(self, args, base):
        self.args = args
        self.base = base
        self.env = dict(os.environ)
        if args.lib_path:
            self.env["LD_LIBRARY_PATH"] = args.lib_path + (
                ":" + self.env["LD_LIBRARY_PATH"] if self.env.get("LD_LIBRARY_PATH") else "")
        for name in ("KCACHE_RECORD", "KCACHE_DISABLE_CACHE", "KCACHE_CUSTOM_CACHE_DIR",
                     "KCACHE_SYSTEM_DB_PATH"):
            self.env.pop(name, None)
        self.env.setdefault("KCACHE_LOG_LEVEL", "warning")
        self.runs = 0

    def fresh(self, label):
        self.runs += 1
        folder = self.base / f"run{self.runs:03d}-{label}"
        folder.mkdir()
        env = dict(self.env)
        # The compilers' own caches: off, and fresh in case "off" is not.
        env["CUDA_CACHE_DISABLE"] = "1"
        env["CUDA_CACHE_PATH"] = str(folder / "cuda-cache")
        env["POCL_KERNEL_CACHE"] = "0"
        env["POCL_CACHE_DIR"] = str(folder / "pocl-cache")
        (folder / "pocl-cache").mkdir()
        return folder, env

    def pack_command(self, manifest, output, work, jobs):
        cmd = [self.args.kcache, "pack", "--manifest", str(manifest), "--target", self.args.target,
               "--output", str(output), "--work", str(work), "--jobs", str(jobs),
               "--backend", self.args.backend]
        if self.args.nvrtc_library:
            cmd += ["--nvrtc-library", self.args.nvrtc_library]
        return cmd

    def timed(self, label, commands, folder, env):
        """Starts every command at once; the wall time until the last ends and
        the CPU seconds (user + sys) of them all, and the share of the
        machine's CPU time the hypervisor took meanwhile."""
        ticks = cpu_ticks()
        before = resource.getrusage(resource.RUSAGE_CHILDREN)
        start = time.perf_counter()
        procs = []
        for i, cmd in enumerate(commands):
            err = open(folder / f"stderr{i}.txt", "wb")
            procs.append((subprocess.Popen(cmd, env=env, stdout=subprocess.PIPE, stderr=err), err))
        sampler = StateSampler([proc.pid for proc, _ in procs], start)
        outputs = []
        for proc, err in procs:
            out, _ = proc.communicate()
            err.close()
            outputs.append((proc.returncode, out.decode(errors="replace")))
        wall = time.perf_counter() - start
        sampler.stop()
        steal = steal_share(ticks, cpu_ticks())
        after = resource.getrusage(resource.RUSAGE_CHILDREN)
        cpu = (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)
        return wall, cpu, outputs, steal, sampler.summary(wall)

    def run(self, manifest, jobs, processes, expected):
        """One timed pack: `jobs` threads in one process, or, with processes > 1,
        the manifest split in that many parts, one `--jobs 1` process each."""
        label = f"p{processes}" if processes > 1 else f"j{jobs}"
        folder, env = self.fresh(label)
        if processes > 1:
            parts = split_manifest(manifest, processes, folder)
            outputs = [folder / f"part{i}.kdb" for i in range(processes)]
            commands = [self.pack_command(part, out, folder / f"work{i}", 1)
                        for i, (part, out) in enumerate(zip(parts, outputs))]
        else:
            outputs = [folder / f"{self.args.target}.kdb"]
            commands = [self.pack_command(manifest, outputs[0], folder / "work", jobs)]
        wall, cpu, results, steal, states = self.timed(label, commands, folder, env)
        problems, compiled, phases = [], 0, None
        for i, (rc, out) in enumerate(results):
            if rc != 0:
                err = (folder / f"stderr{i}.txt").read_text(errors="replace")
                problems.append(f"{' '.join(commands[i])}: exit {rc}\n{out}{err[-3000:]}")
            for line in out.splitlines():
                if line.startswith("packed ") and " compiled," in line:
                    compiled += int(line.split("(")[1].split(" compiled")[0])
                # "took T s: B s before compiling, C s in N jobs (their time:
                # X s compiling, Y s on lines already built or repeating
                # another; the first kernel done after F s), W s writing the
                # package": C is the jobs' wall time (called "compiling" here).
                took = TOOK.match(line)
                if took and processes == 1:
                    phases = {"total": float(took["total"]), "before": float(took["before"]),
                              "compiling": float(took["jobs"]),
                              "first": float(took["first"] or "nan"),
                              "writing": float(took["writing"])}
        if not problems and compiled != expected:
            problems.append(f"{label}: {compiled} kernels compiled, not {expected}: "
                            "every timed run must compile every kernel")
        keys = []
        if not problems:
            for out in outputs:
                keys += kdb_keys(out)
        info = None
        if not problems and processes == 1:
            got = subprocess.run([self.args.kcache, "info", str(outputs[0]), "--json"], env=env,
                                 capture_output=True, text=True)
            info = json.loads(got.stdout)[0] if got.returncode == 0 else None
        return {"label": label, "jobs": jobs, "processes": processes, "wall_s": wall,
                "cpu_s": cpu, "steal": steal, "keys": sorted(keys), "info": info,
                "phases": phases, "states": states,
                "problems": problems,
                "folder": folder}


def cpu_ticks():
    """The machine's CPU time so far, from /proc/stat's first line: (all
    ticks, ticks stolen by the hypervisor), or None where there is none."""
    try:
        with open("/proc/stat") as stat:
            fields = [int(f) for f in stat.readline().split()[1:]]
    except (OSError, ValueError):
        return None
    return sum(fields[:8]), fields[7] if len(fields) > 7 else 0


def steal_share(before, after):
    """The share of the machine's CPU time the hypervisor took between two
    cpu_ticks(): time a VM's cores were not running its work, which no
    count of its own processes shows."""
    if before is None or after is None or after[0] <= before[0]:
        return None
    return (after[1] - before[1]) / (after[0] - before[0])


def sync_cost(folder, rounds=40, size=16 << 10):
    """Mean ms of a `size` append + fdatasync in `folder`: what each entry
    the pack's work tier stores costs under its append lock (one writer at a
    time, whatever --jobs is), so `kernels` times it is a serial floor."""
    path = folder / "sync-probe"
    times = []
    fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_APPEND, 0o600)
    try:
        block = os.urandom(size)
        for _ in range(rounds):
            start = time.perf_counter()
            os.write(fd, block)
            os.fdatasync(fd)
            times.append(time.perf_counter() - start)
    finally:
        os.close(fd)
        path.unlink()
    return 1000 * statistics.mean(times)


def opencl_target(args, base, env):
    """The database name PoCL's device gets, from one compile."""
    src = base / "probe.cl"
    src.write_text("__kernel void probe(__global int* x) { x[get_global_id(0)] = 1; }\n")
    env = dict(env, KCACHE_CUSTOM_CACHE_DIR=str(base / "probe-cache"), KCACHE_LOG_LEVEL="error")
    got = subprocess.run([args.kcache, "compile", "--backend", "opencl", "--source", str(src),
                          "--kernel", "probe", "--json"], env=env, capture_output=True, text=True)
    if got.returncode != 0:
        sys.exit(f"pack_jobs: no OpenCL device to pack for: {got.stderr.strip()}")
    return json.loads(got.stdout)["target"]


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--kcache", required=True, help="the kcache tool")
    parser.add_argument("--backend", choices=["nvrtc", "opencl"], default="nvrtc")
    parser.add_argument("--target", help="default: sm_90 for nvrtc, the OpenCL device's for opencl")
    parser.add_argument("--kernels", type=int, default=500)
    parser.add_argument("--jobs", default=f"1,{os.cpu_count() or 1}",
                        help="comma-separated job counts (default: 1 and the core count)")
    parser.add_argument("--repeat", type=int, default=2, help="timed runs of each job count")
    parser.add_argument("--processes", action="store_true",
                        help="also time N processes on split manifests, N the largest job count")
    parser.add_argument("--lib-path", help="LD_LIBRARY_PATH for kcache only")
    parser.add_argument("--nvrtc-library", help="passed to pack as --nvrtc-library")
    parser.add_argument("--work", help="folder for the runs (default: a new temporary one)")
    parser.add_argument("--keep", action="store_true", help="keep the runs' folders")
    args = parser.parse_args()
    args.kcache = str(pathlib.Path(args.kcache).resolve())
    jobs_list = [int(j) for j in args.jobs.split(",") if j]
    if args.kernels < 1 or args.repeat < 1 or not jobs_list or min(jobs_list) < 1:
        parser.error("--kernels, --repeat and every --jobs must be at least 1")

    if args.work:
        base = pathlib.Path(args.work).resolve()
        if base.exists():
            shutil.rmtree(base)
        base.mkdir(parents=True)
    else:
        base = pathlib.Path(tempfile.mkdtemp(prefix="kcache-pack-jobs-"))
    runner = Runner(args, base)
    if not args.target:
        args.target = "sm_90" if args.backend == "nvrtc" else opencl_target(args, base, runner.env)
    manifest = base / "manifest.jsonl"
    write_manifest(manifest, args.backend, args.kernels)
    print(f"pack_jobs: {args.kernels} kernels, backend {args.backend}, target {args.target}, "
          f"jobs {jobs_list}, {args.repeat} repeats, {os.cpu_count()} cores, manifest "
          f"{manifest.stat().st_size // 1024} KiB", flush=True)
    sync_ms = sync_cost(base)
    print(f"pack_jobs: a 16 KiB append + fdatasync in {base}: {sync_ms:.2f} ms (mean of 40); "
          f"x {args.kernels} entries = {sync_ms * args.kernels / 1000:.2f} s that no job count "
          "shortens (each entry is synced under the work tier's append lock)", flush=True)

    configs = [(j, 1) for j in jobs_list]
    if args.processes and max(jobs_list) > 1:
        configs.append((1, max(jobs_list)))
    results = {c: [] for c in configs}
    failed = []
    for repeat in range(args.repeat):
        # The configurations take turns, and the order flips every repeat,
        # so that a slow spell of a shared machine does not land on one.
        order = configs if repeat % 2 == 0 else list(reversed(configs))
        for jobs, processes in order:
            r = runner.run(manifest, jobs, processes, args.kernels)
            if r["problems"]:
                failed += r["problems"]
                print(f"  {r['label']}: FAILED\n" + "\n".join(r["problems"]), flush=True)
                continue
            results[(jobs, processes)].append(r)
            print(f"  repeat {repeat + 1} {r['label']:>4}: {r['wall_s']:7.2f} s wall, "
                  f"{args.kernels / r['wall_s']:6.1f} kernels/s, {r['cpu_s'] / r['wall_s']:4.2f} "
                  f"cores busy, {1000 * r['cpu_s'] / args.kernels:5.1f} CPU ms/kernel, "
                  f"load {os.getloadavg()[0]:.1f}"
                  + (f", {100 * r['steal']:.1f}% stolen" if r["steal"] is not None else "")
                  + (f"; cores' worth on a CPU {q['on_cpu']:.2f}, waiting for one "
                     f"{q['waiting']:.2f}, asleep {q['asleep']:.2f} ({q['processes']} processes"
                     + "".join(f"; {v} in {k}" for k, v in q["asleep_in"].items()) + ")"
                     if (q := r["states"]) else "")
                  + (f"; in pack: {p['before']:.2f} s before compiling, first kernel done after "
                     f"{p['first']:.2f} s, last after {p['compiling']:.2f} s, "
                     f"{p['writing']:.2f} s writing" if (p := r["phases"]) else ""),
                  flush=True)
            if not args.keep:
                shutil.rmtree(r["folder"], ignore_errors=True)

    # Every package of every run: the same keys.
    all_runs = [r for rs in results.values() for r in rs]
    if all_runs:
        reference = all_runs[0]
        if len(reference["keys"]) != args.kernels:
            failed.append(f"{reference['label']}: {len(reference['keys'])} keys in the package, "
                          f"not {args.kernels}")
        for r in all_runs[1:]:
            if r["keys"] != reference["keys"]:
                failed.append(f"{r['label']}: its package's keys differ from "
                              f"{reference['label']}'s")
        infos = [r["info"] for r in all_runs if r["processes"] == 1]
        for info in infos:
            if not info or info.get("kernels") != args.kernels or \
                    info["metadata"].get("db") != infos[0]["metadata"].get("db"):
                failed.append(f"kcache info disagrees: {info}")
                break

    def label(jobs, processes):
        return f"{processes} processes" if processes > 1 else f"--jobs {jobs}"

    base_runs = results.get((jobs_list[0], 1)) or []
    base_wall = statistics.median(r["wall_s"] for r in base_runs) if base_runs else None
    print()
    print(f"| {args.backend} {args.target}, {args.kernels} kernels | wall s, median (min–max) "
          "| kernels/s | cores busy | CPU ms/kernel | speed-up vs " + label(jobs_list[0], 1) + " |")
    print("|---|---|---|---|---|---|")
    summary = []
    for jobs, processes in configs:
        rs = results[(jobs, processes)]
        if not rs:
            continue
        walls = [r["wall_s"] for r in rs]
        wall = statistics.median(walls)
        busy = statistics.median(r["cpu_s"] / r["wall_s"] for r in rs)
        cpu_ms = statistics.median(1000 * r["cpu_s"] / args.kernels for r in rs)
        speedup = base_wall / wall if base_wall else None
        print(f"| {label(jobs, processes)} | {wall:.2f} ({min(walls):.2f}–{max(walls):.2f}) | "
              f"{args.kernels / wall:.1f} | {busy:.2f} | {cpu_ms:.1f} | "
              f"{'%.2f×' % speedup if speedup else '—'} |")
        summary.append({"jobs": jobs, "processes": processes, "wall_s": walls,
                        "median_s": round(wall, 3), "kernels_per_s": round(args.kernels / wall, 2),
                        "cores_busy": round(busy, 2), "cpu_ms_per_kernel": round(cpu_ms, 1),
                        "stolen": [None if r["steal"] is None else round(r["steal"], 4)
                                   for r in rs],
                        "speedup": round(speedup, 3) if speedup else None,
                        "phases": [r["phases"] for r in rs],
                        "states": [r["states"] for r in rs]})
    keys_same = not any("keys" in f or "info" in f for f in failed) and bool(all_runs)
    print(f"\npackages: {len(all_runs)}, keys the same in all: {'yes' if keys_same else 'NO'}")
    print("PACK_JOBS_JSON " + json.dumps({
        "backend": args.backend, "target": args.target, "kernels": args.kernels,
        "cores": os.cpu_count(), "repeat": args.repeat, "keys_same": keys_same,
        "sync_ms": round(sync_ms, 3),
        "runs": summary, "failed": len(failed)}))
    if not args.keep and not args.work:
        shutil.rmtree(base, ignore_errors=True)
    if failed:
        print("pack_jobs: FAILED:\n" + "\n".join(failed), file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
