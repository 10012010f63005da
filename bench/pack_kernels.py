"""The kernels bench/pack_jobs.py packs (issue 11): tiled GEMMs, direct
convolutions, reductions, 2-D stencils, transposes, row softmaxes and
fused element-wise chains, each family varied in tile sizes, unrolling,
element types and operations, so that every kernel is its own compile of
real work; one generator gives CUDA C++ for NVRTC and OpenCL C for PoCL.

    kernels(count, dialect) -> [(family, kernel name, source)]
"""
import hashlib
import random

# --------------------------------------------------------------------------
# Kernel sources. One generator for both dialects: the families are written
# against a few macros that each dialect's prelude defines.

PRELUDE = {
    "cuda": """\
#define KERNEL extern "C" __global__
#define GLOBAL
#define LOCAL __shared__
#define BARRIER() __syncthreads()
#define GID0 (blockIdx.x * blockDim.x + threadIdx.x)
#define GID1 (blockIdx.y * blockDim.y + threadIdx.y)
#define LID0 ((int)threadIdx.x)
#define LID1 ((int)threadIdx.y)
#define GRP0 ((int)blockIdx.x)
#define GRP1 ((int)blockIdx.y)
#define NGRP0 ((int)gridDim.x)
""",
    "opencl": """\
#pragma OPENCL EXTENSION cl_khr_fp64 : enable
#define KERNEL __kernel
#define GLOBAL __global
#define LOCAL __local
#define BARRIER() barrier(CLK_LOCAL_MEM_FENCE)
#define GID0 ((int)get_global_id(0))
#define GID1 ((int)get_global_id(1))
#define LID0 ((int)get_local_id(0))
#define LID1 ((int)get_local_id(1))
#define GRP0 ((int)get_group_id(0))
#define GRP1 ((int)get_group_id(1))
#define NGRP0 ((int)get_num_groups(0))
""",
}

TYPES = ["float", "double"]


def gemm(p):
    # Register-tiled GEMM: TS x TS tile in local memory, WPT x WPT outputs a
    # thread, the k loop unrolled by UNROLL; transposes and alpha/beta vary.
    ts, wpt, unroll, t, ta, tb = p
    a_at = "A[(k0 + kk) + (row) * K]" if not ta else "A[(row) + (k0 + kk) * M]"
    b_at = "B[(col) + (k0 + kk) * N]" if not tb else "B[(k0 + kk) + (col) * K]"
    src = f"""
#define TS {ts}
#define WPT {wpt}
#define RTS (TS / WPT)
typedef {t} T;
KERNEL void gemm(int M, int N, int K, T alpha, T beta,
                 GLOBAL const T* A, GLOBAL const T* B, GLOBAL T* C) {{
  LOCAL T As[TS][TS + 1];
  LOCAL T Bs[TS][TS + 1];
  const int lr = LID1, lc = LID0;
  const int gr = GRP1 * TS, gc = GRP0 * TS;
  T acc[WPT][WPT];
  for (int i = 0; i < WPT; ++i)
    for (int j = 0; j < WPT; ++j) acc[i][j] = (T)0;
  for (int k0 = 0; k0 < K; k0 += TS) {{
    for (int i = 0; i < WPT; ++i)
      for (int j = 0; j < WPT; ++j) {{
        const int r = lr * WPT + i, c = lc * WPT + j;
        {{ const int row = gr + r; const int kk = c;
          As[r][c] = (row < M && k0 + kk < K) ? {a_at} : (T)0; }}
        {{ const int col = gc + c; const int kk = r;
          Bs[r][c] = (col < N && k0 + kk < K) ? {b_at} : (T)0; }}
      }}
    BARRIER();
#pragma unroll {unroll}
    for (int k = 0; k < TS; ++k)
      for (int i = 0; i < WPT; ++i)
        for (int j = 0; j < WPT; ++j)
          acc[i][j] += As[lr * WPT + i][k] * Bs[k][lc * WPT + j];
    BARRIER();
  }}
  for (int i = 0; i < WPT; ++i)
    for (int j = 0; j < WPT; ++j) {{
      const int row = gr + lr * WPT + i, col = gc + lc * WPT + j;
      if (row < M && col < N) C[row * N + col] = alpha * acc[i][j] + beta * C[row * N + col];
    }}
}}
"""
    return "gemm", src


def conv(p):
    # Direct 2-D convolution, KS x KS filter, channels unrolled by CU.
    ks, cu, t, stride, relu = p
    act = "v = v > (T)0 ? v : (T)0;" if relu else ""
    src = f"""
#define KS {ks}
#define CU {cu}
#define STRIDE {stride}
typedef {t} T;
KERNEL void conv2d(int C, int H, int W, int OH, int OW,
                   GLOBAL const T* in, GLOBAL const T* w, GLOBAL const T* bias,
                   GLOBAL T* out) {{
  const int ox = GID0, oy = GID1, oc = GRP0 % 64;
  if (ox >= OW || oy >= OH) return;
  T v = bias[oc];
  for (int c0 = 0; c0 < C; c0 += CU) {{
#pragma unroll
    for (int cc = 0; cc < CU; ++cc) {{
      const int c = c0 + cc;
      if (c >= C) break;
#pragma unroll
      for (int ky = 0; ky < KS; ++ky)
#pragma unroll
        for (int kx = 0; kx < KS; ++kx) {{
          const int iy = oy * STRIDE + ky - KS / 2, ix = ox * STRIDE + kx - KS / 2;
          if (iy >= 0 && iy < H && ix >= 0 && ix < W)
            v += in[(c * H + iy) * W + ix] * w[((oc * C + c) * KS + ky) * KS + kx];
        }}
    }}
  }}
  {act}
  out[(oc * OH + oy) * OW + ox] = v;
}}
"""
    return "conv2d", src


REDUCE_OPS = {
    "sum": ("(T)0", "a + b", "x"),
    "max": ("(T)-1e30", "(a > b ? a : b)", "x"),
    "min": ("(T)1e30", "(a < b ? a : b)", "x"),
    "sumsq": ("(T)0", "a + b", "x * x"),
    "l1": ("(T)0", "a + b", "(x < (T)0 ? -x : x)"),
}


def reduce_(p):
    # Tree reduction in local memory, IPT items a thread first.
    block, op, t, ipt = p
    ident, comb, load = REDUCE_OPS[op]
    src = f"""
#define BLOCK {block}
#define IPT {ipt}
typedef {t} T;
#define COMBINE(a, b) ({comb})
KERNEL void reduce(int n, GLOBAL const T* in, GLOBAL T* partial) {{
  LOCAL T buf[BLOCK];
  const int tid = LID0;
  T acc = {ident};
  for (int base = GRP0 * BLOCK * IPT; base < n; base += NGRP0 * BLOCK * IPT) {{
#pragma unroll
    for (int i = 0; i < IPT; ++i) {{
      const int at = base + i * BLOCK + tid;
      if (at < n) {{ const T x = in[at]; acc = COMBINE(acc, ({load})); }}
    }}
  }}
  buf[tid] = acc;
  BARRIER();
  for (int s = BLOCK / 2; s > 0; s >>= 1) {{
    if (tid < s) {{ const T a = buf[tid], b = buf[tid + s]; buf[tid] = COMBINE(a, b); }}
    BARRIER();
  }}
  if (tid == 0) partial[GRP0] = buf[0];
}}
"""
    return "reduce", src


def stencil(p):
    # 2-D star stencil of radius R over a tile staged in local memory.
    radius, t, tile = p
    tx, ty = tile
    coeffs = " + ".join(
        f"(T){1.0 / (d + 1):.6f} * (s[ly][lx - {d}] + s[ly][lx + {d}] + s[ly - {d}][lx] + s[ly + {d}][lx])"
        for d in range(1, radius + 1))
    src = f"""
#define R {radius}
#define TX {tx}
#define TY {ty}
typedef {t} T;
KERNEL void stencil(int W, int H, GLOBAL const T* in, GLOBAL T* out) {{
  LOCAL T s[TY + 2 * R][TX + 2 * R];
  const int x = GID0, y = GID1, lx = LID0 + R, ly = LID1 + R;
  for (int j = LID1; j < TY + 2 * R; j += TY)
    for (int i = LID0; i < TX + 2 * R; i += TX) {{
      int gx = GRP0 * TX + i - R, gy = GRP1 * TY + j - R;
      gx = gx < 0 ? 0 : (gx >= W ? W - 1 : gx);
      gy = gy < 0 ? 0 : (gy >= H ? H - 1 : gy);
      s[j][i] = in[gy * W + gx];
    }}
  BARRIER();
  if (x < W && y < H) out[y * W + x] = (T){-0.5 * radius:.3f} * s[ly][lx] + {coeffs};
}}
"""
    return "stencil", src


def transpose(p):
    tile, pad, t, rows = p
    src = f"""
#define TILE {tile}
#define PAD {pad}
#define ROWS {rows}
typedef {t} T;
KERNEL void transpose(int W, int H, GLOBAL const T* in, GLOBAL T* out) {{
  LOCAL T tile[TILE][TILE + PAD];
  int x = GRP0 * TILE + LID0, y = GRP1 * TILE + LID1;
  for (int j = 0; j < TILE; j += ROWS)
    if (x < W && y + j < H) tile[LID1 + j][LID0] = in[(y + j) * W + x];
  BARRIER();
  x = GRP1 * TILE + LID0;
  y = GRP0 * TILE + LID1;
  for (int j = 0; j < TILE; j += ROWS)
    if (x < H && y + j < W) out[(y + j) * H + x] = tile[LID0][LID1 + j];
}}
"""
    return "transpose", src


def softmax(p):
    # One row a work-group: max, exp-sum, normalise; VEC elements a thread.
    block, vec, t, log = p
    final = "out[r * n + i] = v[k] - m - log(total);" if log else "out[r * n + i] = exp(v[k] - m) / total;"
    src = f"""
#define BLOCK {block}
#define VEC {vec}
typedef {t} T;
KERNEL void softmax(int rows, int n, GLOBAL const T* in, GLOBAL T* out) {{
  LOCAL T red[BLOCK];
  const int r = GRP0, tid = LID0;
  if (r >= rows) return;
  T v[VEC];
  T m = (T)-1e30;
#pragma unroll
  for (int k = 0; k < VEC; ++k) {{
    const int i = tid + k * BLOCK;
    v[k] = i < n ? in[r * n + i] : (T)-1e30;
    m = v[k] > m ? v[k] : m;
  }}
  red[tid] = m;
  BARRIER();
  for (int s = BLOCK / 2; s > 0; s >>= 1) {{
    if (tid < s) red[tid] = red[tid] > red[tid + s] ? red[tid] : red[tid + s];
    BARRIER();
  }}
  m = red[0];
  BARRIER();
  T sum = (T)0;
#pragma unroll
  for (int k = 0; k < VEC; ++k) sum += tid + k * BLOCK < n ? exp(v[k] - m) : (T)0;
  red[tid] = sum;
  BARRIER();
  for (int s = BLOCK / 2; s > 0; s >>= 1) {{
    if (tid < s) red[tid] += red[tid + s];
    BARRIER();
  }}
  const T total = red[0];
#pragma unroll
  for (int k = 0; k < VEC; ++k) {{
    const int i = tid + k * BLOCK;
    if (i < n) {{ {final} }}
  }}
}}
"""
    return "softmax", src


UNARY = ["sin({})", "cos({})", "exp({} * (T)0.01)", "tanh({})", "sqrt(fabs({}) + (T)1)",
         "log(fabs({}) + (T)1)", "({} * {} + (T)0.5)", "fmax({}, (T)0)", "fmin({}, (T)6)",
         "(T)1 / ((T)1 + exp(-{}))", "fma({}, (T)1.0001, (T)0.25)", "atan({})"]


def fused(p):
    # A chain of element-wise operations fused into one kernel, ITEMS
    # elements a thread; the chain is drawn from the seed (deterministic).
    seed, length, t, items = p
    rng = int(hashlib.sha256(f"fused {seed}".encode()).hexdigest(), 16)
    lines = []
    for step in range(length):
        rng, pick = divmod(rng, len(UNARY))
        rng, mix = divmod(rng, 3)
        expr = UNARY[pick].format(*(["x"] * UNARY[pick].count("{}")))
        if mix == 0:
            lines.append(f"x = {expr};")
        elif mix == 1:
            lines.append(f"x = {expr} + y * (T){(step + 1) / 7:.5f};")
        else:
            lines.append(f"y = y * (T)0.5 + {expr};")
    body = "\n      ".join(lines)
    src = f"""
#define ITEMS {items}
typedef {t} T;
KERNEL void fused(int n, GLOBAL const T* a, GLOBAL const T* b, GLOBAL T* out) {{
  const int base = GID0 * ITEMS;
#pragma unroll
  for (int k = 0; k < ITEMS; ++k) {{
    const int i = base + k;
    if (i < n) {{
      T x = a[i], y = b[i];
      {body}
      out[i] = x + y;
    }}
  }}
}}
"""
    return "fused", src


def families():
    """Each family: (name, generator, its parameter list)."""
    return [
        ("gemm", gemm, [(ts, wpt, u, t, ta, tb) for ts in (8, 16, 32) for wpt in (1, 2, 4)
                        for u in (1, 4) for t in TYPES for ta in (0, 1) for tb in (0, 1)]),
        ("conv", conv, [(ks, cu, t, st, relu) for ks in (1, 3, 5, 7) for cu in (1, 2, 4)
                        for t in TYPES for st in (1, 2) for relu in (0, 1)]),
        ("reduce", reduce_, [(b, op, t, ipt) for b in (64, 128, 256, 512) for op in REDUCE_OPS
                             for t in TYPES for ipt in (1, 2, 4, 8)]),
        ("stencil", stencil, [(r, t, tile) for r in range(1, 9) for t in TYPES
                              for tile in ((8, 8), (16, 16), (32, 8), (16, 4))]),
        ("transpose", transpose, [(tl, pad, t, rows) for tl in (8, 16, 32) for pad in (0, 1)
                                  for t in TYPES for rows in (1, 2, 4, 8) if rows <= tl]),
        ("softmax", softmax, [(b, v, t, lg) for b in (32, 64, 128, 256) for v in (1, 2, 4, 8)
                              for t in TYPES for lg in (0, 1)]),
        # Unbounded: fills whatever the others leave.
        ("fused", fused, None),
    ]


def kernels(count, dialect):
    """`count` distinct (family, name, source) of `dialect`: the families in
    turn, so that any count holds a mix of them."""
    lists = []
    for name, gen, params in families():
        if params is not None:
            params = list(params)
            # A fixed shuffle: any count takes a spread of each family's
            # variants, not its first corner.
            random.Random(name).shuffle(params)
        lists.append((name, gen, params))
    out, seen, turn = [], set(), 0
    fused_seed = 0
    while len(out) < count:
        name, gen, params = lists[turn % len(lists)]
        turn += 1
        if params is None:
            fused_seed += 1
            p = (fused_seed, 6 + fused_seed % 19, TYPES[fused_seed % 2], (1, 2, 4)[fused_seed % 3])
        elif params:
            p = params.pop(0)
        else:
            continue
        kernel, body = gen(p)
        source = PRELUDE[dialect] + body
        if source in seen:
            continue
        seen.add(source)
        out.append((name, kernel, source))
    return out
