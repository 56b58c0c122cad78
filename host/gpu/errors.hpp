// The error types of moehub-gpu and the exit status each one gives.
//   UsageError   bad arguments (option, allowed range)                    exit 2
//   OutOfMemory  a device allocation failed (cudaErrorMemoryAllocation,   exit 1
//                CUBLAS_STATUS_ALLOC_FAILED): a size limit, which
//                `memory` reports and skips
//   RankAborted  another rank failed, or a transport error: this rank     exit 1
//                aborted its communicator
//   anything else (CUDA, NCCL, internal std::invalid_argument ...)        exit 1
#pragma once

#include <exception>
#include <stdexcept>
#include <string>

namespace moehub::gpu {

struct UsageError : std::runtime_error {
  using std::runtime_error::runtime_error;
};
struct OutOfMemory : std::runtime_error {
  using std::runtime_error::runtime_error;
};
struct RankAborted : std::runtime_error {
  using std::runtime_error::runtime_error;
};

/// The exit status for an exception that ended a command: 2 for UsageError, 1 otherwise.
int exit_status_of(const std::exception& e);

/// Converts std::invalid_argument thrown by `f` (a parser or validator fed with user
/// input) into a UsageError with the same message, prefixed by `context` when given.
/// Only calls on user input go through here: an invalid_argument raised inside the
/// layer is an internal error (exit 1).
template <class F>
auto from_user_input(const std::string& context, F&& f) -> decltype(f()) {
  try {
    return f();
  } catch (const std::invalid_argument& e) {
    throw UsageError(context.empty() ? std::string(e.what()) : context + ": " + e.what());
  }
}

}  // namespace moehub::gpu
