// Transport: how ranks exchange data. The layer's schedules are written once above
// this interface; each call is collective over the ranks this process drives
// (`local_ranks()`): one per process with NCCL, all of them in folded mode.
//
// Each operation is stream-ordered on the per-rank stream given with it: it starts
// after the work already queued there and completes, for both the send and the receive
// side, before the work queued there afterwards (as NCCL point-to-point calls do).
#pragma once

#include <cuda_runtime.h>

#include <cstddef>
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

namespace moehub::gpu {

struct Segment {
  void* ptr;          ///< device memory
  std::size_t bytes;
};

/// One local rank's part of a ring exchange: send `send` to (rank + 1) mod n, receive
/// `recv` from (rank - 1) mod n; segment i of a send lands in segment i of the receive
/// (same sizes, agreed by both sides).
struct RingXfer {
  int rank;
  cudaStream_t stream;
  std::vector<Segment> send, recv;
};

/// One local rank's part of an all-to-all with counts: send[p] go to peer p, recv[p]
/// come from peer p (segment lists; segment i from s to d matches segment i at d from s).
struct A2AXfer {
  int rank;
  cudaStream_t stream;
  std::vector<std::vector<Segment>> send, recv;
};

class Transport {
 public:
  virtual ~Transport() = default;
  virtual std::string name() const = 0;
  virtual int size() const = 0;
  virtual std::vector<int> local_ranks() const = 0;
  virtual int device_of(int rank) const = 0;
  virtual void ring_exchange(std::vector<RingXfer>& xfers) = 0;
  virtual void all_to_all(std::vector<A2AXfer>& xfers) = 0;
  /// All-gather of `bytes` from each rank's device buffer `send[i]` (local rank i), the
  /// result (size() * bytes, rank-major) returned on the host. Synchronises the streams:
  /// this is the named host synchronisation of the layer (routing counts).
  virtual std::vector<char> all_gather_host(const std::vector<const void*>& send, std::size_t bytes,
                                            const std::vector<cudaStream_t>& streams) = 0;
  /// Blocks until the work queued on `stream` (one of a local rank's streams) is done.
  /// NCCL: polls, and when another rank failed or NCCL reports an asynchronous error
  /// aborts this rank's communicator and throws RankAborted instead of waiting forever.
  virtual void wait(cudaStream_t stream) = 0;
  /// Tells the other ranks that this one failed (NCCL: an abort notice in the rendezvous
  /// directory, then ncclCommAbort) so that they stop waiting and exit non-zero. The NCCL
  /// transport calls it itself when it is destroyed by an exception. Nothing in folded mode.
  virtual void abort(const std::string& why) = 0;
};

/// A failure made on purpose by the hidden option --fail-rank R [--fail-at init|layer]
/// (tests: the other ranks must exit non-zero within seconds). rank -1: none.
struct InjectedFailure {
  int rank = -1;
  std::string at = "layer";  ///< "init": before the NCCL communicator; "layer": before the layer's first exchange
};
void set_injected_failure(const InjectedFailure&);
/// Throws std::runtime_error ("rank R fails on purpose ...") when the injected failure is
/// for `rank` at `point`.
void maybe_fail_on_purpose(int rank, const std::string& point);

/// N ranks on one GPU; hops are device-to-device copies ordered by events.
std::unique_ptr<Transport> make_folded_transport(int ranks, int device);

/// True when this build has NCCL.
bool have_nccl();
/// One rank per GPU through NCCL; rank and size from MPI (when built with it) or from
/// OMPI_COMM_WORLD_RANK/SIZE or PMI_RANK/PMI_SIZE, the unique id exchanged through MPI
/// or a file in `rendezvous_dir`. Throws std::runtime_error when NCCL is not built in.
std::unique_ptr<Transport> make_nccl_transport(const std::string& rendezvous_dir);

}  // namespace moehub::gpu
