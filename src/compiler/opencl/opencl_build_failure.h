// How the opencl backend says that the platform's build of a request failed
// (clBuildProgram: CL_BUILD_PROGRAM_FAILURE): the message of its
// kCompileError, whose details are the build log. A remembered failure
// (the negative cache) keeps the message at its start. The OpenCL layer
// answers such a program's build with it, as the platform would.
#pragma once

#include <string_view>

namespace kcache {

inline constexpr std::string_view kOpenClBuildFailed = "the OpenCL build failed";

}  // namespace kcache
