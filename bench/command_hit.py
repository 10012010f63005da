#!/usr/bin/env python3
"""Whole-process hit of `kcache compile --backend command` against ccache's
direct-mode hit of the same compile (issue 10: kcache <= 0.75x ccache).

Both compile the same source, which includes a header through -I, with the
same compiler command (nvcc -c, or gcc -c where nvcc is missing), each into
a fresh cache of its own; after one miss each, both are hits. The runs
alternate, kcache then ccache, so both see the same host; the figure is the
median wall time of a whole process (fork, exec, the hit, the output file
written), from Python's perf_counter around subprocess.run.

    bench/command_hit.py --kcache build-release/tools/kcache/kcache [--runs 40] [--compiler nvcc|gcc]
"""
import argparse
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--kcache", required=True)
    parser.add_argument("--runs", type=int, default=40)
    parser.add_argument("--compiler", choices=["nvcc", "gcc"], default=None)
    args = parser.parse_args()
    args.kcache = os.path.abspath(args.kcache)

    ccache = shutil.which("ccache")
    nvcc = shutil.which("nvcc") or ("/usr/local/cuda/bin/nvcc"
                                    if os.path.exists("/usr/local/cuda/bin/nvcc") else None)
    compiler = args.compiler or ("nvcc" if nvcc else "gcc")
    if ccache is None or (compiler == "nvcc" and nvcc is None):
        print("command_hit: skipped (needs ccache and %s)" % compiler)
        return 125

    work = tempfile.mkdtemp(prefix="kcache-command-hit-")
    try:
        os.makedirs(os.path.join(work, "inc"))
        with open(os.path.join(work, "inc", "params.h"), "w") as f:
            f.write("#define SCALE 2.0f\n")
        if compiler == "nvcc":
            source = "k.cu"
            text = '#include "params.h"\n__global__ void k(float* x) { x[threadIdx.x] *= SCALE; }\n'
            program = [nvcc, "-c", "-arch=sm_90", "-Iinc"]
        else:
            source = "k.c"
            text = '#include "params.h"\nvoid k(float* x, int i) { x[i] *= SCALE; }\n'
            program = ["gcc", "-c", "-O2", "-Iinc"]
        with open(os.path.join(work, source), "w") as f:
            f.write(text)

        env = dict(os.environ)
        env["KCACHE_CUSTOM_CACHE_DIR"] = os.path.join(work, "kcache")
        env["KCACHE_LOG_LEVEL"] = "error"
        env["CCACHE_DIR"] = os.path.join(work, "ccache")
        env["CCACHE_NOHASHDIR"] = "1"
        template = " ".join(program) + " {in} -o {out}"
        kcache_cmd = [args.kcache, "compile", "--backend", "command", "--command", template,
                      "--source", source, "--output", "k.kcache.o"]
        ccache_cmd = [ccache] + program + [source, "-o", "k.ccache.o"]

        def timed(cmd):
            start = time.perf_counter()
            done = subprocess.run(cmd, cwd=work, env=env, stdout=subprocess.PIPE,
                                  stderr=subprocess.PIPE)
            elapsed = (time.perf_counter() - start) * 1000
            if done.returncode != 0:
                sys.exit("command_hit: %s failed:\n%s" % (cmd[0], done.stderr.decode()))
            return elapsed

        miss_k = timed(kcache_cmd)
        miss_c = timed(ccache_cmd)
        kcache_ms, ccache_ms = [], []
        for _ in range(args.runs):
            kcache_ms.append(timed(kcache_cmd))
            ccache_ms.append(timed(ccache_cmd))
        stats = subprocess.run([ccache, "--print-stats"], env=env, stdout=subprocess.PIPE).stdout
        direct_hits = [l for l in stats.decode().splitlines() if l.startswith("direct_cache_hit")]
        k, c = statistics.median(kcache_ms), statistics.median(ccache_ms)
        print("command_hit: %s, %d runs each, alternated; misses kcache %.0f ms, ccache %.0f ms"
              % (" ".join(program), args.runs, miss_k, miss_c))
        print("ccache: %s" % (direct_hits[0] if direct_hits else "?"))
        print()
        print("| whole-process hit | median ms | p90 ms |")
        print("|---|---|---|")
        for name, ms in (("kcache compile", kcache_ms), ("ccache (direct mode)", ccache_ms)):
            ms = sorted(ms)
            print("| %s | %.2f | %.2f |" % (name, statistics.median(ms), ms[int(len(ms) * 0.9)]))
        print()
        print("kcache / ccache: %.2fx" % (k / c))
        return 0
    finally:
        shutil.rmtree(work, ignore_errors=True)


if __name__ == "__main__":
    sys.exit(main())
