"""An OpenCL program that knows nothing of kcache and loads the ICD loader
itself, as a ctypes program does: ctypes.CDLL of libOpenCL by its soname or
its path, every function looked up on that handle. It builds a program from
source on the first device, runs a kernel and prints, one line each, what a
program sees (build status and log, kernel names, results), and a build
that fails. tests/layers/opencl_dlopen.sh runs it without kcache and under
`kcache run`, and compares.

Usage: dlopen_probe.py LIBRARY INCLUDE_DIR
  INCLUDE_DIR holds probe.h, which the source includes through -I.
Exit 0 when it ran to the end, 1 when a call that must work failed, 125
when there is no ICD loader or no OpenCL device.
"""
import ctypes
import re
import sys

SOURCE = b"""#include "probe.h"
kernel void scale(global int* a, int s) { size_t i = get_global_id(0); a[i] = a[i] * s + OFFSET; }
kernel void twice(global int* a) { a[get_global_id(0)] *= 2; }
"""
BROKEN = b"kernel void broken(global int* a) { a[0] = undeclared_probe_name; }\n"

CL_DEVICE_TYPE_ALL = 0xFFFFFFFF
CL_PROGRAM_BUILD_STATUS = 0x1181
CL_PROGRAM_BUILD_LOG = 0x1183
CL_PROGRAM_NUM_KERNELS = 0x1167
CL_PROGRAM_KERNEL_NAMES = 0x1168
CL_MEM_READ_WRITE = 1 << 0
CL_MEM_COPY_HOST_PTR = 1 << 5


def main():
    library_name, include = sys.argv[1], sys.argv[2]
    try:
        cl = ctypes.CDLL(library_name)
    except OSError as error:
        print("no %s: %s" % (library_name, error))
        return 125
    for name in ("clCreateContext", "clCreateCommandQueue", "clCreateProgramWithSource",
                 "clCreateKernel", "clCreateBuffer"):
        getattr(cl, name).restype = ctypes.c_void_p

    def check(rc, what):
        if rc != 0:
            print("FAIL %s: OpenCL error %d" % (what, rc))
            sys.exit(1)

    platform, device, count = ctypes.c_void_p(), ctypes.c_void_p(), ctypes.c_uint()
    if cl.clGetPlatformIDs(1, ctypes.byref(platform), ctypes.byref(count)) != 0 or count.value == 0:
        print("no OpenCL platform")
        return 125
    if cl.clGetDeviceIDs(platform, ctypes.c_uint64(CL_DEVICE_TYPE_ALL), 1, ctypes.byref(device),
                         ctypes.byref(count)) != 0 or count.value == 0:
        print("no OpenCL device")
        return 125
    err = ctypes.c_int()
    context = ctypes.c_void_p(cl.clCreateContext(None, 1, ctypes.byref(device), None, None,
                                                 ctypes.byref(err)))
    check(err.value, "clCreateContext")
    queue = ctypes.c_void_p(cl.clCreateCommandQueue(context, device, ctypes.c_uint64(0),
                                                    ctypes.byref(err)))
    check(err.value, "clCreateCommandQueue")

    def info_text(query, *args):
        size = ctypes.c_size_t()
        check(query(*args, 0, None, ctypes.byref(size)), "size of a text")
        text = ctypes.create_string_buffer(size.value)
        check(query(*args, size, text, None), "a text")
        return text.value.decode()

    def build(label, source):
        program = ctypes.c_void_p(cl.clCreateProgramWithSource(
            context, 1, ctypes.byref(ctypes.c_char_p(source)), None, ctypes.byref(err)))
        check(err.value, "clCreateProgramWithSource")
        rc = cl.clBuildProgram(program, 1, ctypes.byref(device), b"-I" + include.encode(), None,
                               None)
        status = ctypes.c_int()
        check(cl.clGetProgramBuildInfo(program, device, CL_PROGRAM_BUILD_STATUS,
                                       ctypes.sizeof(status), ctypes.byref(status), None),
              "CL_PROGRAM_BUILD_STATUS")
        log = info_text(cl.clGetProgramBuildInfo, program, device, CL_PROGRAM_BUILD_LOG)
        print("%s build: rc %d status %d" % (label, rc, status.value))
        # The platform names the source after a file of its own (PoCL: a
        # temporary one, in the folder of its cache).
        log = re.sub(r"\S*tempfile_\w+\.cl", "<source>", log)
        print("%s log:\n%s\n-- end of log" % (label, log.strip()))
        return program, rc

    program, rc = build("source", SOURCE)
    check(rc, "clBuildProgram")
    kernels = ctypes.c_size_t()
    check(cl.clGetProgramInfo(program, CL_PROGRAM_NUM_KERNELS, ctypes.sizeof(kernels),
                              ctypes.byref(kernels), None), "CL_PROGRAM_NUM_KERNELS")
    names = info_text(cl.clGetProgramInfo, program, CL_PROGRAM_KERNEL_NAMES)
    print("kernels: %d %s" % (kernels.value, ";".join(sorted(names.split(";")))))

    data = (ctypes.c_int * 8)(*range(8))
    buffer = ctypes.c_void_p(cl.clCreateBuffer(context, ctypes.c_uint64(CL_MEM_READ_WRITE |
                                                                        CL_MEM_COPY_HOST_PTR),
                                               ctypes.sizeof(data), data, ctypes.byref(err)))
    check(err.value, "clCreateBuffer")
    kernel = ctypes.c_void_p(cl.clCreateKernel(program, b"scale", ctypes.byref(err)))
    check(err.value, "clCreateKernel")
    check(cl.clSetKernelArg(kernel, 0, ctypes.sizeof(buffer), ctypes.byref(buffer)), "arg 0")
    factor = ctypes.c_int(3)
    check(cl.clSetKernelArg(kernel, 1, ctypes.sizeof(factor), ctypes.byref(factor)), "arg 1")
    size = ctypes.c_size_t(len(data))
    check(cl.clEnqueueNDRangeKernel(queue, kernel, 1, None, ctypes.byref(size), None, 0, None,
                                    None), "clEnqueueNDRangeKernel")
    check(cl.clEnqueueReadBuffer(queue, buffer, 1, 0, ctypes.sizeof(data), data, 0, None, None),
          "clEnqueueReadBuffer")
    print("scale: %s" % " ".join(str(value) for value in data))
    check(cl.clReleaseKernel(kernel), "clReleaseKernel")
    check(cl.clReleaseMemObject(buffer), "clReleaseMemObject")
    check(cl.clReleaseProgram(program), "clReleaseProgram")

    broken, rc = build("broken", BROKEN)
    check(cl.clReleaseProgram(broken), "clReleaseProgram of the broken program")
    check(cl.clReleaseCommandQueue(queue), "clReleaseCommandQueue")
    check(cl.clReleaseContext(context), "clReleaseContext")
    print("done")
    return 0


if __name__ == "__main__":
    sys.exit(main())
