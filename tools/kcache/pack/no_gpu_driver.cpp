// libkcache-no-gpu-driver.so, soname libcuda.so.1: what `kcache pack`
// loads, when every line is NVRTC's, before NVRTC does anything. NVRTC 13
// opens libcuda.so.1 and calls cuInit on its first compile in a process,
// though a cubin for a named arch owes nothing to a GPU; the dynamic
// loader hands a dlopen of a name a loaded library already answers to
// (its soname), so NVRTC gets this one: a driver that finds no device,
// and has none of the private tables NVRTC asks a driver for, as one too
// old for them answers. The real driver's cuInit, even with the GPUs
// hidden, took its locks: 16 processes starting at once waited ~0.2 s
// each (docs/benchmarks.md); the cubins are the same either way.
extern "C" {

// CUDA_ERROR_NO_DEVICE, CUDA_ERROR_NOT_SUPPORTED.
constexpr int kNoDevice = 100;
constexpr int kNotSupported = 801;

__attribute__((visibility("default"))) int cuInit(unsigned /*flags*/) { return kNoDevice; }

__attribute__((visibility("default"))) int cuGetExportTable(const void** table,
                                                            const void* /*id*/) {
  if (table != nullptr) *table = nullptr;
  return kNotSupported;
}

}  // extern "C"
