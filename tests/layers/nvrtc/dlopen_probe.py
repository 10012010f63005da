"""An NVRTC program that knows nothing of kcache and loads NVRTC as
cuda-python's loader does: ctypes.CDLL of a library's path (a wheel's
nvidia/cuda_nvrtc/lib/libnvrtc.so.12, the toolkit's), every function looked
up on that handle (or, with --global, as cuda.bindings 12.9 and 13 do: each
function looked up in the global scope first, the library opened RTLD_GLOBAL
only when it is not found there, and the function then looked up on it). It
compiles and prints, one line each, what a program sees: results, CUBIN and
PTX sizes and digests, logs. tests/layers/nvrtc_dlopen.sh runs it without
kcache and under `kcache run`, and compares.

Usage: dlopen_probe.py LIBRARY INCLUDE_DIR [--global] [--also NAME]
  LIBRARY      the path (or soname) ctypes opens
  INCLUDE_DIR  holds probe.h, which the sources include through -I
  --also NAME  opens NAME too (a soname, another path) and compiles through
               it as well
Exit 0 when it ran to the end, 125 when LIBRARY cannot be loaded.
"""
import _ctypes
import ctypes
import glob
import hashlib
import os
import re
import sys
import threading

RTLD_DEFAULT = None
SOURCE = b"""#include "probe.h"
extern "C" __global__ void scale(int* a) { a[threadIdx.x] = a[threadIdx.x] * OFFSET + LANE; }
__global__ void warn() { int unused_probe_variable; }
"""
BROKEN = b'extern "C" __global__ void broken(int* a) { a[0] = undeclared_probe_name; }\n'


class Nvrtc:
    """NVRTC's functions, found as the program finds them."""

    NAMES = ("nvrtcVersion", "nvrtcCreateProgram", "nvrtcCompileProgram", "nvrtcDestroyProgram",
             "nvrtcGetProgramLogSize", "nvrtcGetProgramLog", "nvrtcGetCUBINSize", "nvrtcGetCUBIN",
             "nvrtcGetPTXSize", "nvrtcGetPTX")

    def __init__(self, open_library, global_first):
        libdl = ctypes.CDLL(None)
        libdl.dlsym.restype = ctypes.c_void_p
        libdl.dlsym.argtypes = (ctypes.c_void_p, ctypes.c_char_p)
        library = None
        for name in self.NAMES:
            address = libdl.dlsym(RTLD_DEFAULT, name.encode()) if global_first else None
            if address:
                function = ctypes.CFUNCTYPE(ctypes.c_int)(address)
            else:
                library = library or open_library()
                function = getattr(library, name)
            function.restype = ctypes.c_int
            setattr(self, name[len("nvrtc"):], function)

    def version(self):
        major, minor = ctypes.c_int(), ctypes.c_int()
        rc = self.Version(ctypes.byref(major), ctypes.byref(minor))
        return "rc %d %d.%d" % (rc, major.value, minor.value)

    def output(self, size_of, get, program):
        size = ctypes.c_size_t()
        rc = size_of(program, ctypes.byref(size))
        data = ctypes.create_string_buffer(size.value)
        got = get(program, data) if rc == 0 and size.value else -1
        return rc, got, data.raw

    def compile(self, label, source, options, include):
        program = ctypes.c_void_p()
        rc = self.CreateProgram(ctypes.byref(program), source, b"probe.cu", 0, None, None)
        lines = ["%s create: rc %d" % (label, rc)]
        if rc != 0:
            return lines
        argv = [b"-I" + include.encode()] + options
        rc = self.CompileProgram(program, len(argv), (ctypes.c_char_p * len(argv))(*argv))
        lines.append("%s compile: rc %d" % (label, rc))
        rc, got, log = self.output(self.GetProgramLogSize, self.GetProgramLog, program)
        lines.append("%s log: rc %d/%d\n%s\n-- end of log" % (label, rc, got, log.rstrip(b"\0").decode()))
        for what, size_of, get in (("cubin", self.GetCUBINSize, self.GetCUBIN),
                                   ("ptx", self.GetPTXSize, self.GetPTX)):
            rc, got, data = self.output(size_of, get, program)
            lines.append("%s %s: rc %d/%d size %d sha256 %s" %
                         (label, what, rc, got, len(data), hashlib.sha256(data).hexdigest()[:16]))
        lines.append("%s destroy: rc %d" % (label, self.DestroyProgram(ctypes.byref(program))))
        return lines

    def all(self, label, include):
        lines = [label + " version: " + self.version()]
        lines += self.compile(label + " cubin", SOURCE, [b"-arch=sm_80", b"-DLANE=1"], include)
        lines += self.compile(label + " ptx", SOURCE, [b"--gpu-architecture=compute_80", b"-DLANE=2"],
                              include)
        lines += self.compile(label + " broken", BROKEN, [b"-arch=sm_80"], include)
        return lines


def main():
    args = sys.argv[1:]
    global_first = "--global" in args
    also = args[args.index("--also") + 1] if "--also" in args else None
    library_name, include = args[0], args[1]
    mode = os.RTLD_NOW | (os.RTLD_GLOBAL if global_first else os.RTLD_LOCAL)

    # What a loader's probes see before the library is open: no such file, and
    # the library not loaded yet.
    try:
        ctypes.CDLL(os.path.join(os.path.dirname(library_name) or "/nonexistent", "libnvrtc.so.404"))
        print("missing: opened")
    except OSError:
        print("missing: OSError")
    try:
        ctypes.CDLL(library_name, mode=os.RTLD_NOLOAD)
        print("before: already loaded")
    except OSError:
        print("before: not loaded")

    # A wheel's NVRTC finds its builtins beside it only once they are loaded:
    # cuda-python loads them first, by their path.
    folder = os.path.dirname(library_name)
    for builtins in sorted(glob.glob(os.path.join(folder, "libnvrtc-builtins.so.*"))) if folder else []:
        if re.fullmatch(r"libnvrtc-builtins\.so\.\d+\.\d+", os.path.basename(builtins)):
            ctypes.CDLL(builtins, mode=os.RTLD_NOW | os.RTLD_GLOBAL)
    def open_library():
        return ctypes.CDLL(library_name, mode=mode)

    if not os.path.exists(library_name) and "/" in library_name:
        print("no %s" % library_name)
        return 125

    # Threads that each open the library and compile their own kernel, at
    # once, before anything else looked a function up.
    results = {}

    def work(lane):
        own = Nvrtc(open_library, global_first)
        results[lane] = own.compile("thread %d" % lane, SOURCE, [b"-arch=sm_80", b"-DLANE=%d" % lane],
                                    include)

    threads = [threading.Thread(target=work, args=(lane,)) for lane in range(10, 14)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    for lane in sorted(results):
        for line in results[lane]:
            print(line)

    library = open_library()
    for line in Nvrtc(lambda: library, global_first).all("first", include):
        print(line)

    # Closed and opened again: the same library, the same answers.
    _ctypes.dlclose(library._handle)
    for line in Nvrtc(open_library, global_first).all("reopened", include):
        print(line)

    if also is not None:
        for line in Nvrtc(lambda: ctypes.CDLL(also, mode=mode), global_first).all("also", include):
            print(line)

    # dlopen(NULL): the global scope, where NVRTC is when it was opened
    # RTLD_GLOBAL.
    try:
        print("main handle version: " + Nvrtc(lambda: ctypes.CDLL(None), False).version())
    except AttributeError:
        print("main handle: no NVRTC")
    print("done")
    return 0


if __name__ == "__main__":
    sys.exit(main())
