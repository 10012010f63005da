// PoCL's binaries as the OpenCL layer reads and extends them, on the PoCL
// of this machine (layers/opencl/pocl_binary.h): the work-group code a
// program's launches compiled is added, PoCL unpacks it from the extended
// binary before any launch, the kernels still compute the same, and no
// damaged binary or odd file is ever read as one.
#define CL_TARGET_OPENCL_VERSION 300
#include "layers/opencl/pocl_binary.h"

#include <CL/cl.h>
#include <gtest/gtest.h>
#include <unistd.h>

#include <algorithm>
#include <cmath>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <string>
#include <vector>

#include "fakes/required_backends.h"

namespace kcache::layer {
namespace {

namespace fs = std::filesystem;

// PoCL reads its settings when the loader first starts it: its cache off,
// its folder ours, before any OpenCL call of this process.
// Removed at exit (never destroyed before that).
const std::string& pocl_dir() {
  static const std::string* const dir = [] {
    auto* path = new std::string((fs::temp_directory_path() / "kcache-pocl-XXXXXX").string());
    if (::mkdtemp(path->data()) == nullptr) std::abort();
    ::setenv("POCL_KERNEL_CACHE", "0", 1);
    ::setenv("POCL_CACHE_DIR", path->c_str(), 1);
    std::atexit([] {
      std::error_code ignored;
      fs::remove_all(pocl_dir(), ignored);
    });
    return path;
  }();
  return *dir;
}
const bool kPoclSet = !pocl_dir().empty();

const char* kSource =
    "__kernel void twice(__global float* x) { size_t i = get_global_id(0);"
    " x[i] = 2.0f * sin(x[i]); }\n"
    "__kernel void plus_one(__global float* x) { x[get_global_id(0)] += 1.0f; }\n";

std::string read_file(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  std::stringstream text;
  text << in.rdbuf();
  return text.str();
}

class PoclBinaryTest : public ::testing::Test {
 protected:
  void SetUp() override {
    ASSERT_TRUE(kPoclSet);
    cl_uint count = 0;
    if (clGetPlatformIDs(0, nullptr, &count) != CL_SUCCESS || count == 0) {
      KCACHE_SKIP_OR_FAIL_BACKEND("opencl", "no OpenCL platform");
    }
    std::vector<cl_platform_id> platforms(count);
    clGetPlatformIDs(count, platforms.data(), nullptr);
    for (cl_platform_id platform : platforms) {
      char name[256] = {};
      clGetPlatformInfo(platform, CL_PLATFORM_NAME, sizeof name, name, nullptr);
      if (std::strstr(name, "Portable Computing Language") == nullptr) continue;
      if (clGetDeviceIDs(platform, CL_DEVICE_TYPE_ALL, 1, &device_, nullptr) == CL_SUCCESS) break;
    }
    if (device_ == nullptr) KCACHE_SKIP_OR_FAIL_BACKEND("opencl", "no PoCL device");
    cl_int err = CL_SUCCESS;
    context_ = clCreateContext(nullptr, 1, &device_, nullptr, nullptr, &err);
    ASSERT_EQ(err, CL_SUCCESS);
    queue_ = clCreateCommandQueueWithProperties(context_, device_, nullptr, &err);
    ASSERT_EQ(err, CL_SUCCESS);
    cl_program source = clCreateProgramWithSource(context_, 1, &kSource, nullptr, &err);
    ASSERT_EQ(err, CL_SUCCESS);
    ASSERT_EQ(clBuildProgram(source, 1, &device_, "", nullptr, nullptr), CL_SUCCESS);
    plain_ = binary_of(source);
    clReleaseProgram(source);
    ASSERT_FALSE(plain_.empty());
  }
  void TearDown() override {
    if (queue_ != nullptr) clReleaseCommandQueue(queue_);
    if (context_ != nullptr) clReleaseContext(context_);
  }

  static std::vector<std::uint8_t> binary_of(cl_program program) {
    std::size_t size = 0;
    clGetProgramInfo(program, CL_PROGRAM_BINARY_SIZES, sizeof size, &size, nullptr);
    std::vector<std::uint8_t> binary(size);
    unsigned char* data = binary.data();
    clGetProgramInfo(program, CL_PROGRAM_BINARIES, sizeof data, &data, nullptr);
    return binary;
  }
  cl_program from_binary(const std::vector<std::uint8_t>& binary) {
    const std::size_t size = binary.size();
    const unsigned char* data = binary.data();
    cl_int err = CL_SUCCESS;
    cl_program program =
        clCreateProgramWithBinary(context_, 1, &device_, &size, &data, nullptr, &err);
    EXPECT_EQ(err, CL_SUCCESS);
    EXPECT_EQ(clBuildProgram(program, 1, &device_, "", nullptr, nullptr), CL_SUCCESS);
    return program;
  }
  // Runs kernel `twice` of `program` over 64 floats at `local` work-items a
  // group; true when every result is 2 sin(x).
  bool launch_twice(cl_program program, std::size_t local) {
    cl_int err = CL_SUCCESS;
    cl_kernel kernel = clCreateKernel(program, "twice", &err);
    if (err != CL_SUCCESS) return false;
    std::vector<float> x(64);
    for (std::size_t i = 0; i < x.size(); ++i) x[i] = 0.01f * static_cast<float>(i);
    cl_mem buffer = clCreateBuffer(context_, CL_MEM_READ_WRITE | CL_MEM_COPY_HOST_PTR,
                                   x.size() * sizeof(float), x.data(), &err);
    clSetKernelArg(kernel, 0, sizeof buffer, &buffer);
    const std::size_t global = x.size();
    err = clEnqueueNDRangeKernel(queue_, kernel, 1, nullptr, &global, &local, 0, nullptr, nullptr);
    std::vector<float> y(x.size());
    if (err == CL_SUCCESS) {
      err = clEnqueueReadBuffer(queue_, buffer, CL_TRUE, 0, y.size() * sizeof(float), y.data(), 0,
                                nullptr, nullptr);
    }
    clReleaseMemObject(buffer);
    clReleaseKernel(kernel);
    if (err != CL_SUCCESS) return false;
    for (std::size_t i = 0; i < x.size(); ++i) {
      if (std::abs(y[i] - 2.0f * std::sin(x[i])) > 1e-5f) return false;
    }
    return true;
  }
  static const PoclKernelRecord* record(const PoclBinary& layout, const std::string& name) {
    for (const auto& kernel : layout.kernels) {
      if (kernel.name == name) return &kernel;
    }
    return nullptr;
  }

  cl_device_id device_ = nullptr;
  cl_context context_ = nullptr;
  cl_command_queue queue_ = nullptr;
  std::vector<std::uint8_t> plain_;  // built from source, never launched
};

TEST_F(PoclBinaryTest, ABinaryOfThisPoclIsRead) {
  auto layout = read_pocl_binary(plain_);
  ASSERT_TRUE(layout) << "PoCL's binary is not of version " << kPoclBinaryVersion
                      << ": the layer keeps no work-group code on this PoCL";
  EXPECT_FALSE(layout->folder.empty());
  ASSERT_EQ(layout->kernels.size(), 2u);
  for (const std::string name : {"twice", "plus_one"}) {
    const PoclKernelRecord* kernel = record(*layout, name);
    ASSERT_NE(kernel, nullptr) << name;
    ASSERT_FALSE(kernel->files.empty()) << name;
    for (const auto& path : kernel->files) EXPECT_TRUE(path.starts_with("/" + name + "/")) << path;
  }
}

TEST_F(PoclBinaryTest, WorkGroupCodeOfLaunchesIsAddedAndUnpackedBeforeAnyLaunch) {
#if defined(__SANITIZE_THREAD__)
  // PoCL's device threads, which run the kernels, trip ThreadSanitizer on
  // their own (tests/layers/opencl_layer.sh launches nothing there either).
  GTEST_SKIP() << "no launches under ThreadSanitizer";
#endif
  auto plain = read_pocl_binary(plain_);
  ASSERT_TRUE(plain);
  const std::string folder = pocl_dir() + "/" + plain->folder;
  cl_program launched = from_binary(plain_);
  ASSERT_TRUE(launch_twice(launched, 16));
  ASSERT_TRUE(launch_twice(launched, 32));
  auto code = with_work_group_code(plain_, pocl_dir());
  ASSERT_TRUE(code);
  EXPECT_EQ(code->files, 2u);
  auto layout = read_pocl_binary(code->binary);
  ASSERT_TRUE(layout) << "the extended binary no longer reads";
  const PoclKernelRecord* twice = record(*layout, "twice");
  ASSERT_NE(twice, nullptr);
  ASSERT_EQ(twice->files.size(), record(*plain, "twice")->files.size() + 2);
  EXPECT_EQ(record(*layout, "plus_one")->files, record(*plain, "plus_one")->files);
  std::vector<std::pair<std::string, std::string>> added;  // path, content
  for (const auto& path : twice->files) {
    const auto& old = record(*plain, "twice")->files;
    if (std::find(old.begin(), old.end(), path) != old.end()) continue;
    EXPECT_TRUE(path.ends_with("/twice.so")) << path;
    added.emplace_back(path, read_file(folder + path));
    EXPECT_FALSE(added.back().second.empty()) << path;
  }
  ASSERT_EQ(added.size(), 2u);
  clReleaseProgram(launched);
  std::error_code ignored;
  fs::remove_all(folder, ignored);

  // PoCL unpacks them from the extended binary; no launch has compiled them.
  cl_program again = from_binary(code->binary);
  for (const auto& [path, content] : added) EXPECT_EQ(read_file(folder + path), content) << path;
  EXPECT_TRUE(launch_twice(again, 16));
  EXPECT_TRUE(launch_twice(again, 32));
  // Nothing new to add: the same local sizes again.
  EXPECT_FALSE(with_work_group_code(code->binary, pocl_dir()));
  clReleaseProgram(again);
}

// Only regular files named as PoCL names its work-group code, in folders
// named as PoCL names them, are taken.
TEST_F(PoclBinaryTest, NoOtherFileIsTaken) {
  auto plain = read_pocl_binary(plain_);
  ASSERT_TRUE(plain);
  const std::string kernel_dir = pocl_dir() + "/" + plain->folder + "/twice";
  cl_program program = from_binary(plain_);  // unpacks the folder
  fs::create_directories(kernel_dir + "/a b");
  std::ofstream(kernel_dir + "/a b/twice.so") << "odd folder";
  fs::create_directories(kernel_dir + "/linked");
  fs::create_symlink("/etc/hostname", kernel_dir + "/linked/twice.so");
  fs::create_directories(kernel_dir + "/folder/twice.so");
  fs::create_directories(kernel_dir + "/other");
  std::ofstream(kernel_dir + "/other/other.so") << "another name";
  fs::create_directories(kernel_dir + "/empty");
  std::ofstream(kernel_dir + "/empty/twice.so");
  EXPECT_FALSE(with_work_group_code(plain_, pocl_dir()));
  clReleaseProgram(program);
}

// Cut short anywhere, or with a size that lies, a binary is not read (and
// reading it never runs past its end: the sanitizer presets run this).
TEST_F(PoclBinaryTest, DamagedBinariesAreNotRead) {
  ASSERT_TRUE(read_pocl_binary(plain_));
  for (std::size_t size = 0; size < plain_.size(); size += size < 256 ? 1 : 331) {
    std::span<const std::uint8_t> cut(plain_.data(), size);
    EXPECT_FALSE(read_pocl_binary(cut)) << "cut at " << size;
    EXPECT_FALSE(with_work_group_code(cut, pocl_dir())) << "cut at " << size;
  }
  std::vector<std::uint8_t> longer = plain_;
  longer.push_back(0);
  EXPECT_FALSE(read_pocl_binary(longer));
  // Each byte of the header and the first kernel record's sizes, flipped.
  auto layout = read_pocl_binary(plain_);
  std::vector<std::size_t> at;
  for (std::size_t i = 0; i < 100; ++i) at.push_back(i);
  for (std::size_t i = 0; i < 28; ++i) at.push_back(layout->kernels[0].begin + i);
  for (std::size_t i : at) {
    std::vector<std::uint8_t> flipped = plain_;
    flipped[i] ^= 0x80;
    if (auto read = read_pocl_binary(flipped)) {
      EXPECT_EQ(read->kernels.size(), layout->kernels.size()) << "byte " << i;
    }
    (void)with_work_group_code(flipped, pocl_dir());
  }
  // A folder name that leaves POCL_CACHE_DIR.
  std::vector<std::uint8_t> escaping = plain_;
  std::memcpy(escaping.data() + 36, "../../etc", 10);
  EXPECT_FALSE(read_pocl_binary(escaping));
}

}  // namespace
}  // namespace kcache::layer
