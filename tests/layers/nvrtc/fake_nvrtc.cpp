// A library that is an NVRTC of a version kcache has no stand-in for
// (libnvrtc.so.7, its functions under that symbol version: fake_nvrtc.map),
// for tests/layers/nvrtc_dlopen.sh: a program that opens it by its path
// gets its own functions, and `kcache run` says once that it is not served.
extern "C" {

__attribute__((visibility("default"))) int nvrtcVersion(int* major, int* minor) {
  *major = 7;
  *minor = 0;
  return 0;
}

__attribute__((visibility("default"))) const char* nvrtcGetErrorString(int) {
  return "NVRTC_SUCCESS";
}

}  // extern "C"
