// Error checking for CUDA, cuBLAS and kernel-launcher calls: every call goes through a
// macro that reports its own call site (file:line and the call's text). A failed
// allocation throws OutOfMemory (from the error code, cudaErrorMemoryAllocation or
// CUBLAS_STATUS_ALLOC_FAILED); any other failure std::runtime_error.
#pragma once

#include <cublas_v2.h>
#include <cuda_runtime.h>

#include <sstream>
#include <stdexcept>
#include <string>

#include "errors.hpp"

namespace moehub::gpu {

inline std::string call_site(const char* what, const std::string& detail, const char* file, int line) {
  std::ostringstream os;
  os << file << ":" << line << ": " << what << " failed: " << detail;
  return os.str();
}
[[noreturn]] inline void fail_call(const char* what, const std::string& detail, const char* file, int line) {
  throw std::runtime_error(call_site(what, detail, file, line));
}

inline void check_cuda(cudaError_t e, const char* what, const char* file, int line) {
  if (e == cudaSuccess) return;
  if (e == cudaErrorMemoryAllocation) {
    cudaGetLastError();  // not sticky: clear it so that the caller may go on with smaller sizes
    throw OutOfMemory(call_site(what, cudaGetErrorString(e), file, line));
  }
  fail_call(what, cudaGetErrorString(e), file, line);
}
inline void check_cublas(cublasStatus_t s, const char* what, const char* file, int line) {
  if (s == CUBLAS_STATUS_SUCCESS) return;
  if (s == CUBLAS_STATUS_ALLOC_FAILED) throw OutOfMemory(call_site(what, cublasGetStatusString(s), file, line));
  fail_call(what, cublasGetStatusString(s), file, line);
}

}  // namespace moehub::gpu

/// Checks a CUDA runtime call or one of our kernel launchers (they return cudaError_t).
#define MOEHUB_CUDA_CHECK(call) ::moehub::gpu::check_cuda((call), #call, __FILE__, __LINE__)
#define MOEHUB_CUBLAS_CHECK(call) ::moehub::gpu::check_cublas((call), #call, __FILE__, __LINE__)
