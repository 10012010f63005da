#!/usr/bin/env python3
"""CuPy under the NVRTC shim (issue 13): a realistic set of kernels
(RawModule with name expressions, ElementwiseKernel, ReductionKernel),
each run and checked against NumPy, in one process.

    cupy_shim.py [--variants N]

Prints "kernels <n> ready_s <seconds from the first compile to the last
result> ok" or exits 1 on a wrong result. bench/layers/run_cupy_shim.sh
times it in fresh processes: CuPy's own disk cache cold and warm, CuPy
in memory only (every process compiles with NVRTC), and in memory under
`kcache run` cold and warm.
"""
import argparse
import sys
import time

import numpy
import cupy

RAW = r"""
template <typename T, int BLOCK>
__global__ void scale_add(const T* x, T* y, T a, int n) {
  int i = blockIdx.x * BLOCK + threadIdx.x;
  if (i < n) y[i] = a * x[i] + y[i] + T(VARIANT);
}
extern "C" __global__ void square(const float* x, float* y, int n) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n) y[i] = x[i] * x[i] + VARIANT;
}
"""


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--variants", type=int, default=8)
    args = parser.parse_args()
    n = 1 << 16
    x = cupy.arange(n, dtype=cupy.float32) / n
    xs = cupy.asnumpy(x)
    cupy.cuda.Device().synchronize()
    kernels = 0
    start = time.perf_counter()
    for v in range(args.variants):
        # RawModule, templated, through name expressions.
        names = ["scale_add<float, 256>", "scale_add<double, 128>"]
        module = cupy.RawModule(code=RAW, options=("-std=c++17", f"-DVARIANT={v}"),
                                name_expressions=names)
        f = module.get_function(names[0])
        y = cupy.ones(n, dtype=cupy.float32)
        f(((n + 255) // 256,), (256,), (x, y, numpy.float32(2.0), numpy.int32(n)))
        if not numpy.allclose(cupy.asnumpy(y), 2.0 * xs + 1.0 + v):
            print(f"wrong RawModule result, variant {v}")
            return 1
        sq = module.get_function("square")
        sq(((n + 255) // 256,), (256,), (x, y, numpy.int32(n)))
        if not numpy.allclose(cupy.asnumpy(y), xs * xs + v):
            print(f"wrong square result, variant {v}")
            return 1
        # ElementwiseKernel and ReductionKernel (CuPy generates the source).
        ew = cupy.ElementwiseKernel("float32 x, float32 a", "float32 y",
                                    f"y = a * x + {v}", f"kcache_axpb_{v}")
        if not numpy.allclose(cupy.asnumpy(ew(x, numpy.float32(3.0))), 3.0 * xs + v):
            print(f"wrong ElementwiseKernel result, variant {v}")
            return 1
        red = cupy.ReductionKernel("float32 x", "float32 y", f"x * x + {v}", "a + b", "y = a",
                                   "0", f"kcache_sumsq_{v}")
        got = float(red(x))
        want = float(numpy.sum(xs.astype(numpy.float64) ** 2 + v))
        if abs(got - want) > 1e-3 * abs(want):
            print(f"wrong ReductionKernel result, variant {v}: {got} != {want}")
            return 1
        kernels += 4
    cupy.cuda.Device().synchronize()
    print(f"kernels {kernels} ready_s {time.perf_counter() - start:.3f} ok")
    return 0


if __name__ == "__main__":
    sys.exit(main())
