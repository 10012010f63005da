#!/usr/bin/env python3
"""Kernel-ready time on a GPU: kcache against the load floor and its peers.

    run_load_bench.py --bench BUILD/bench/cuda_load_bench --work DIR [--repeats 3]
                      [--small 40] [--big 8] [--out results.md]

Every measurement runs in a fresh process (cuda_load_bench or cupy_load.py);
per kernel, the median over the repeats is taken, then the median over the
kernels of a set. Phases:
  NVRTC cold     prepare, CUDA_CACHE_DISABLE=1 (NVRTC 13 keeps its PTX->SASS
                 step in the driver's cache; off here), through a kcache miss
  floor          cuModuleLoadData + cuModuleGetFunction from bytes in memory
  kcache user    ModuleLoader::get_function, the user tier of `prepare`
  kcache system  the same from the exported .kdb, empty user tier
  driver JIT     PTX through cuModuleLoadData, CUDA_CACHE_PATH warm (2nd process)
  CuPy           cupy.RawModule, CUPY_CACHE_DIR warm (2nd process)
  NVRTC warm     NVRTC compile again with the driver's cache warm (2nd process)
  kcache parts   key derivation alone, and the user/system lookup alone (no load),
                 each in its own process: where kcache's time over the floor goes
  paired         the floor and kcache in one process, kernel by kernel in turn
                 (the roles swap every repeat); the ratio of kcache's median to the
                 floor's median in that process, then the median over processes.
                 Processes on these hosts come in fast and slow kinds; a ratio
                 within one process cancels that, where separate processes for
                 the floor and kcache can land on different kinds.
  paired parts   as paired, kcache's turn done step by step (key, tier fetch,
                 load, cuModuleGetFunction), each step timed apart
  paired least   as paired, kcache's turn being only what issue 11 asks of any
                 mapped system tier (hash the key text, checksum the entry in
                 the mapping, compare the material, load from the mapping): a
                 lower bound on this host, not an implementation
"""
import argparse
import os
import pathlib
import shutil
import statistics
import subprocess
import sys
import time


LIB_PATH = None  # LD_LIBRARY_PATH for kcache's programs only (not Python's)
CPU = None  # the one CPU every measured process runs on (None: not pinned)


def gpu_local_cpu():
    """A CPU next to GPU 0 (its PCI device's local_cpulist), not CPU 0 (which
    takes more interrupts); None when it cannot be found."""
    try:
        bus = subprocess.run(["nvidia-smi", "--query-gpu=pci.bus_id", "--format=csv,noheader",
                              "-i", "0"], capture_output=True, text=True, check=True).stdout
        bus = bus.strip().lower()
        domain, rest = bus.split(":", 1)
        path = pathlib.Path(f"/sys/bus/pci/devices/{domain[-4:]}:{rest}/local_cpulist")
        cpus = []
        for part in path.read_text().strip().split(","):
            lo, _, hi = part.partition("-")
            cpus.extend(range(int(lo), int(hi or lo) + 1))
        allowed = os.sched_getaffinity(0)
        cpus = [c for c in cpus if c in allowed]
        return next((c for c in cpus if c != 0), cpus[0] if cpus else None)
    except (OSError, ValueError, subprocess.CalledProcessError, IndexError):
        return None


def run(cmd, env_extra=None, unset=(), lib_path=None):
    env = dict(os.environ)
    lib_path = lib_path or LIB_PATH
    if lib_path and not str(cmd[0]).endswith("python3") and cmd[0] != sys.executable:
        env["LD_LIBRARY_PATH"] = lib_path
    for name in unset:
        env.pop(name, None)
    env.update(env_extra or {})
    started = time.time()
    pin = (lambda: os.sched_setaffinity(0, {CPU})) if CPU is not None else None
    proc = subprocess.run(cmd, env=env, capture_output=True, text=True, preexec_fn=pin)
    if proc.returncode != 0:
        sys.stderr.write(proc.stdout + proc.stderr)
        raise SystemExit(f"failed ({proc.returncode}): {' '.join(map(str, cmd))}")
    print(f"  {time.time() - started:6.1f} s  {' '.join(map(str, cmd[1:4]))} {env_extra or ''}",
          file=sys.stderr, flush=True)
    return proc.stdout


def parse(output, kinds):
    """{(kind, set, id): us} from '<kind> <set> <id> <us>' lines."""
    values = {}
    for line in output.splitlines():
        parts = line.split()
        if len(parts) == 4 and parts[0] in kinds:
            values[(parts[0], parts[1], parts[2])] = float(parts[3])
    return values


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--bench", required=True)
    parser.add_argument("--work", required=True)
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--small", type=int, default=40)
    parser.add_argument("--big", type=int, default=8)
    parser.add_argument("--out")
    parser.add_argument("--skip-cupy", action="store_true")
    parser.add_argument("--lib-path", help="LD_LIBRARY_PATH for the benchmark binary only")
    parser.add_argument("--baseline-lib-path",
                        help="another build's library folder (LD_LIBRARY_PATH, e.g. the last "
                             "commit's libkcache.so): its paired runs take turns with this "
                             "build's in every repeat, an A/B within one run")
    parser.add_argument("--cpu", default="auto",
                        help="run every process on this CPU ('auto': one next to the GPU; "
                             "'none': not pinned), so that all modes run alike")
    args = parser.parse_args()
    global LIB_PATH, CPU
    LIB_PATH = args.lib_path
    CPU = (gpu_local_cpu() if args.cpu == "auto" else None if args.cpu == "none"
           else int(args.cpu))
    print(f"processes pinned to CPU {CPU}" if CPU is not None else "processes not pinned",
          file=sys.stderr)
    bench = str(pathlib.Path(args.bench).resolve())
    work = pathlib.Path(args.work).resolve()
    if work.exists():
        shutil.rmtree(work)
    work.mkdir(parents=True)
    cupy_script = str(pathlib.Path(__file__).with_name("cupy_load.py"))
    sets = ["small", "big"]
    samples = {}  # (kind, set, id) -> [us]

    def add(values):
        for key, us in values.items():
            samples.setdefault(key, []).append(us)

    print(run([bench, "gen", "--dir", work, "--small", str(args.small), "--big", str(args.big)]),
          file=sys.stderr)
    prepared = run([bench, "prepare", "--dir", work], {"CUDA_CACHE_DISABLE": "1"})
    add(parse(prepared, {"nvrtc_cold"}))
    sizes = {}
    target = "?"
    for line in prepared.splitlines():
        parts = line.split()
        if parts and parts[0] == "size":
            sizes.setdefault(parts[1], []).append(int(parts[4]))
        if parts and parts[0] == "target":
            target = parts[1]

    jit = {"CUDA_CACHE_PATH": str(work / "driver-jit"), "CUDA_CACHE_MAXSIZE": "4294967296"}
    setup = {}
    for s in sets:  # populate the driver's JIT cache with the PTX
        add({("ptx_cold",) + k[1:]: v for k, v in
             parse(run([bench, "measure", "--dir", work, "--mode", "ptx", "--set", s], jit,
                       unset=["CUDA_CACHE_DISABLE"]), {"ptx"}).items()})
    if not args.skip_cupy:
        cupy_env = {"CUPY_CACHE_DIR": str(work / "cupy-cache")}
        for s in sets:  # populate CuPy's cache
            add({("cupy_cold",) + k[1:]: v for k, v in
                 parse(run([sys.executable, cupy_script, "--dir", work, "--set", s], cupy_env),
                       {"cupy"}).items()})
    # The machine drifts (other tenants, clocks): the floor and kcache's
    # modes run in a different order in every repeat, so that no mode is
    # always measured first or last.
    modes = ["floor", "user", "system"]
    paired = {}  # (tier, set, baseline build) -> [ratio of one process]
    paired_parts = {}  # (tier, set, "kcache_key"...) -> [median of one process]
    for repeat in range(args.repeats):
        for s in sets:
            order = modes[repeat % 3:] + modes[:repeat % 3]
            if repeat % 2:
                order.reverse()
            for mode in order:
                out = run([bench, "measure", "--dir", work, "--mode", mode, "--set", s])
                add(parse(out, {mode}))
                for line in out.splitlines():
                    if line.startswith("setup "):
                        setup.setdefault(mode, []).append(float(line.split()[2]))
            builds = [None] + ([args.baseline_lib_path] if args.baseline_lib_path else [])
            if repeat % 2:
                builds.reverse()
            # least: the work issue 11 asks of any mapped system tier and
            # nothing else (cuda_load_bench.cpp, paired_least), this build only.
            for tier in ("user", "system", "least"):
                for build in builds if tier != "least" else [None]:
                    out = run([bench, "measure", "--dir", work, "--mode", "paired_" + tier,
                               "--set", s, "--parity", str(repeat % 2)], lib_path=build)
                    times = {"pfloor": [], "pkcache": []}
                    for index, line in enumerate(out.splitlines()):
                        parts = line.split()
                        # The first two loads of a process run on cold code: left out.
                        if len(parts) == 4 and index >= 2:
                            times[parts[0].split("_")[0]].append(float(parts[3]))
                    if times["pfloor"] and times["pkcache"]:
                        paired.setdefault((tier, s, build is not None), []).append(
                            statistics.median(times["pkcache"]) /
                            statistics.median(times["pfloor"]))
            for tier in ("user", "system"):
                out = run([bench, "measure", "--dir", work, "--mode", "paired_parts_" + tier,
                           "--set", s, "--parity", str(repeat % 2)])
                times = {}
                for line in out.splitlines():
                    parts = line.split()
                    # The first two kernels of a process run on cold code: left out.
                    if len(parts) == 4 and parts[0].startswith("q") and \
                            int(parts[2].rsplit("_", 1)[1]) >= 2:
                        times.setdefault(parts[0][1:], []).append(float(parts[3]))
                for part, values in times.items():
                    paired_parts.setdefault((tier, s, part), []).append(statistics.median(values))
            add(parse(run([bench, "measure", "--dir", work, "--mode", "ptx", "--set", s], jit,
                          unset=["CUDA_CACHE_DISABLE"]), {"ptx"}))
            for part in ("key", "fetch", "fetch_system", "split"):  # where kcache's time goes
                add(parse(run([bench, "measure", "--dir", work, "--mode", part, "--set", s]),
                          {part, "split_fetch", "split_load"}))
            if not args.skip_cupy:
                add(parse(run([sys.executable, cupy_script, "--dir", work, "--set", s], cupy_env),
                          {"cupy"}))
    nvrtc_jit = {"CUDA_CACHE_PATH": str(work / "nvrtc-jit"), "CUDA_CACHE_MAXSIZE": "4294967296"}
    for s in sets:
        run([bench, "nvrtc", "--dir", work, "--set", s, "--arch", target.rsplit("_", 1)[0]],
            nvrtc_jit, unset=["CUDA_CACHE_DISABLE"])  # populates
        add({("nvrtc_warm",) + k[1:]: v for k, v in
             parse(run([bench, "nvrtc", "--dir", work, "--set", s, "--arch",
                        target.rsplit("_", 1)[0]], nvrtc_jit, unset=["CUDA_CACHE_DISABLE"]),
                   {"nvrtc"}).items()})

    def set_median(kind, s):
        per_kernel = [statistics.median(v) for (k, ks, _), v in samples.items()
                      if k == kind and ks == s]
        return statistics.median(per_kernel) if per_kernel else None

    def per_kernel_ratio(kind, s):
        ratios = []
        for (k, ks, kid), v in samples.items():
            if k == kind and ks == s and ("floor", s, kid) in samples:
                ratios.append(statistics.median(v) / statistics.median(samples[("floor", s, kid)]))
        return statistics.median(ratios) if ratios else None

    rows = [("NVRTC compile, cold (CUDA_CACHE_DISABLE=1)", "nvrtc_cold"),
            ("NVRTC compile, driver cache warm (2nd process)", "nvrtc_warm"),
            ("floor: cuModuleLoadData + cuModuleGetFunction from memory", "floor"),
            ("**kcache warm, user tier** (request -> CUfunction)", "user"),
            ("**kcache warm, system tier** (.kdb)", "system"),
            ("CUDA driver JIT cache, PTX, warm", "ptx"),
            ("CUDA driver JIT, PTX, cold (1st process)", "ptx_cold"),
            ("CuPy RawModule, warm cache", "cupy"),
            ("CuPy RawModule, cold (1st process)", "cupy_cold"),
            ("kcache part: key derivation alone (Cache::key_for)", "key"),
            ("kcache part: user-tier lookup alone (get_or_compile hit)", "fetch"),
            ("kcache part: system-tier lookup alone", "fetch_system"),
            ("kcache part: user-tier lookup, then (timed apart) ...", "split_fetch"),
            ("... the load of the bytes it returned", "split_load")]

    def fmt(us):
        if us is None:
            return "—"
        return f"{us / 1000:.1f} ms" if us >= 1000 else f"{us:.1f} µs"

    lines = [f"Target {target}; {args.small} small kernels (cubin "
             f"{min(sizes.get('small', [0]))}–{max(sizes.get('small', [0]))} B), {args.big} big "
             f"modules of 9 instantiations (cubin {min(sizes.get('big', [0]))}–"
             f"{max(sizes.get('big', [0]))} B); {args.repeats} fresh processes per warm phase"
             f" ({'all on CPU ' + str(CPU) if CPU is not None else 'not pinned'}); "
             "median over kernels of the per-kernel median.", "",
             "| per kernel | small | big | small / floor | big / floor |",
             "|---|---|---|---|---|"]
    for label, kind in rows:
        lines.append(f"| {label} | {fmt(set_median(kind, 'small'))} | {fmt(set_median(kind, 'big'))}"
                     f" | {per_kernel_ratio(kind, 'small') or 0:.2f}× | "
                     f"{per_kernel_ratio(kind, 'big') or 0:.2f}× |")
    for mode, values in setup.items():
        lines.append(f"\nOnce per process, kcache {mode}: Cache::open + make_compiler(nvrtc) + "
                     f"ModuleLoader::create = {statistics.median(values) / 1000:.1f} ms (median).")
    def per_repeat_ratios(kind, s):
        """The ratio of each repeat alone (the median over kernels of that
        repeat's kcache time / that repeat's floor): how much it moves."""
        ratios = []
        for i in range(args.repeats):
            per_kernel = [v[i] / samples[("floor", s, kid)][i]
                          for (k, ks, kid), v in samples.items()
                          if k == kind and ks == s and i < len(v)
                          and i < len(samples.get(("floor", s, kid), []))]
            if per_kernel:
                ratios.append(statistics.median(per_kernel))
        return ratios

    targets = []
    for s in sets:
        for mode in ("user", "system"):
            r = per_kernel_ratio(mode, s)
            spread = per_repeat_ratios(mode, s)
            targets.append(f"kcache {mode} / floor, {s}: {r:.2f}× "
                           f"({'met' if r is not None and r <= 1.25 else 'NOT met'}, target ≤ 1.25×;"
                           f" single repeats {min(spread):.2f}–{max(spread):.2f}×)")
    for baseline in (False, True):
        for s in sets:
            for tier in ("user", "system", "least"):
                ratios = paired.get((tier, s, baseline), [])
                if ratios:
                    r = statistics.median(ratios)
                    who = f"baseline build ({args.baseline_lib_path}) " if baseline else ""
                    targets.append(f"paired (same process), {who}kcache {tier} / floor, {s}: "
                                   f"{r:.2f}× (system target ≤ 1.10×; "
                                   f"{len(ratios)} processes, {min(ratios):.2f}–{max(ratios):.2f}×)")
    # Where kcache's time over the floor goes, within one process (the
    # median over processes of each part's median in its process).
    for s in sets:
        for tier in ("user", "system"):
            def part(name):
                values = paired_parts.get((tier, s, name))
                return statistics.median(values) if values else float("nan")
            if (tier, s, "kcache_total") not in paired_parts:
                continue
            targets.append(
                f"paired parts, {tier}, {s}: kcache key {part('kcache_key'):.1f} + fetch "
                f"{part('kcache_fetch'):.1f} + load {part('kcache_load'):.1f} + function "
                f"{part('kcache_function'):.1f} = {part('kcache_total'):.1f} µs; floor load "
                f"{part('floor_load'):.1f} + function {part('floor_function'):.1f} = "
                f"{part('floor_total'):.1f} µs; "
                f"{part('kcache_total') / part('floor_total'):.2f}×")
    lines += ["", *targets]
    text = "\n".join(lines)
    print(text)
    raw = "\n".join(f"{k[0]} {k[1]} {k[2]} " + " ".join(f"{x:.2f}" for x in v)
                    for k, v in sorted(samples.items()))
    if args.out:
        pathlib.Path(args.out).write_text(text + "\n")
        pathlib.Path(args.out).with_suffix(".raw.txt").write_text(raw + "\n")


if __name__ == "__main__":
    main()
