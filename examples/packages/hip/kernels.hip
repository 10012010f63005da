// The HIP kernels of the kcache-demo-kernels-gfx90a package. There is no
// HIP demo: these are the kernels the hip tests compile
// (tests/cli/hip_compile.sh), a template instance and an extern "C" kernel.
template <int N>
__global__ void scale(float* x) { x[threadIdx.x] *= N; }
extern "C" __global__ void vadd(const float* a, const float* b, float* c) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  c[i] = a[i] + b[i];
}
