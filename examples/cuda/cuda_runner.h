// One kernel's problem on the GPU: its input buffers uploaded, its output
// buffer allocated and poisoned, then a launch of a CUfunction on them and
// the output read back. Uses the current CUDA context (the one kcache's
// ModuleLoader made current); every object frees what it allocated.
#pragma once

#include <kcache/status.h>

#include <memory>
#include <vector>

#include "cuda_driver.h"
#include "cuda_kernel_library.h"

namespace kcache_demo {

class CudaKernelRun {
 public:
  // Allocates a buffer per pointer argument, uploads the inputs and fills
  // the output with NaN (0xFF bytes), so that an element the kernel never
  // writes fails the check. Returns when the data is on the device, so that
  // what is timed after it is the kernel alone. `driver` and `spec` are
  // borrowed and must outlive the run.
  static kcache::Result<std::unique_ptr<CudaKernelRun>> prepare(const CudaDriver& driver,
                                                                const CudaKernelSpec& spec);
  ~CudaKernelRun();
  CudaKernelRun(const CudaKernelRun&) = delete;
  CudaKernelRun& operator=(const CudaKernelRun&) = delete;

  // Launches `function` (a CUfunction) with the spec's grid and block on the
  // default stream and waits for it. An error of the launch, or of the
  // kernel (reported by cuCtxSynchronize), comes back with the driver's
  // name and description of it.
  kcache::Status launch(void* function);
  // The output buffer, read back.
  kcache::Result<std::vector<float>> read_output();

 private:
  CudaKernelRun(const CudaDriver& driver, const CudaKernelSpec& spec)
      : driver_(driver), spec_(spec) {}
  const CudaDriver& driver_;
  const CudaKernelSpec& spec_;
  std::vector<CUdeviceptr> buffers_;  // per arg; 0 for an integer
  std::vector<int> integers_;         // per arg; the value of an integer
};

}  // namespace kcache_demo
