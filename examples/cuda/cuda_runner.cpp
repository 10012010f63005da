#include "cuda_runner.h"

#include <string>

namespace kcache_demo {

kcache::Result<std::unique_ptr<CudaKernelRun>> CudaKernelRun::prepare(const CudaDriver& driver,
                                                                      const CudaKernelSpec& spec) {
  std::unique_ptr<CudaKernelRun> run(new CudaKernelRun(driver, spec));
  run->buffers_.assign(spec.args.size(), 0);
  run->integers_.assign(spec.args.size(), 0);
  for (std::size_t i = 0; i < spec.args.size(); ++i) {
    const KernelArg& arg = spec.args[i];
    if (arg.kind == KernelArg::Kind::kInt) {
      run->integers_[i] = arg.value;
      continue;
    }
    const std::size_t count = arg.kind == KernelArg::Kind::kInput ? arg.values.size() : arg.count;
    const std::size_t bytes = (count == 0 ? 1 : count) * sizeof(float);
    if (kcache::Status s = driver.check(driver.MemAlloc(&run->buffers_[i], bytes), "cuMemAlloc");
        !s.is_ok()) {
      return s;
    }
    kcache::Status filled =
        arg.kind == KernelArg::Kind::kInput
            ? driver.check(driver.MemcpyHtoD(run->buffers_[i], arg.values.data(), bytes),
                           "cuMemcpyHtoD")
            : driver.check(driver.MemsetD8(run->buffers_[i], 0xFF, bytes), "cuMemsetD8");
    if (!filled.is_ok()) return filled;
  }
  // The copies and the fill are synchronous with respect to the host for
  // pageable memory, but the memset may still be queued.
  if (kcache::Status s = driver.check(driver.CtxSynchronize(), "cuCtxSynchronize"); !s.is_ok()) {
    return s;
  }
  return run;
}

CudaKernelRun::~CudaKernelRun() {
  // After a kernel fault the context is gone and cuMemFree fails; nothing
  // more can be done about it here, and the demo reports the fault itself.
  for (CUdeviceptr buffer : buffers_) {
    if (buffer != 0) driver_.MemFree(buffer);
  }
}

kcache::Status CudaKernelRun::launch(void* function) {
  if (function == nullptr) return kcache::Status::invalid_argument("no function to launch");
  std::vector<void*> params(spec_.args.size());
  for (std::size_t i = 0; i < spec_.args.size(); ++i) {
    params[i] = spec_.args[i].kind == KernelArg::Kind::kInt ? static_cast<void*>(&integers_[i])
                                                            : static_cast<void*>(&buffers_[i]);
  }
  const auto& grid = spec_.grid;
  const auto& block = spec_.block;
  if (kcache::Status s = driver_.check(
          driver_.LaunchKernel(function, grid[0], grid[1], grid[2], block[0], block[1], block[2],
                               /*sharedMemBytes=*/0, /*hStream=*/nullptr, params.data(),
                               /*extra=*/nullptr),
          "cuLaunchKernel");
      !s.is_ok()) {
    return s;
  }
  // A fault inside the kernel shows up here.
  return driver_.check(driver_.CtxSynchronize(), "cuCtxSynchronize after the launch");
}

kcache::Result<std::vector<float>> CudaKernelRun::read_output() {
  for (std::size_t i = 0; i < spec_.args.size(); ++i) {
    if (spec_.args[i].kind != KernelArg::Kind::kOutput) continue;
    std::vector<float> values(spec_.args[i].count);
    if (values.empty()) return values;
    if (kcache::Status s = driver_.check(
            driver_.MemcpyDtoH(values.data(), buffers_[i], values.size() * sizeof(float)),
            "cuMemcpyDtoH");
        !s.is_ok()) {
      return s;
    }
    return values;
  }
  return kcache::Status::invalid_argument("the kernel " + spec_.name + " has no output buffer");
}

}  // namespace kcache_demo
