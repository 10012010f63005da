// What a pack of NVRTC's lines does so that NVRTC leaves the GPU driver
// alone (nvrtc_without_driver.cpp says why and how).
#pragma once

#include <vector>

#include "pack/recorded_lines.h"

namespace kcache::tool {

// When every line of `lines` is NVRTC's: hides the GPUs (CUDA_VISIBLE_DEVICES
// empty) and loads kcache's stand-in for the driver in this process, before
// anything loads the driver. Another backend may need the device (OpenCL
// compiles for one): then nothing is changed. Called with one thread
// running (it sets the environment).
void keep_nvrtc_from_the_driver(const std::vector<Line>& lines);

}  // namespace kcache::tool
