// NCCL transport: one rank per GPU, point-to-point send/receive for the ring and grouped
// send/receive for the all-to-all. The NCCL unique id travels through MPI when built
// with it, else through a file in a rendezvous directory.
//
// Failures: the communicator is non-blocking (ncclConfig_t::blocking = 0), so that no
// NCCL call and no wait blocks the host: initialisation and every group end are settled
// by polling ncclCommGetAsyncError, and stream waits poll cudaStreamQuery
// (poll_until_done). Between polls a wait checks for an asynchronous NCCL error, for an
// abort notice that a failed rank left in the rendezvous directory
// (moehub_abort_<id>, named after this run's unique id) and for a time limit
// (MOEHUB_NCCL_TIMEOUT_S, default 300 s; 0 = none). On any of them it aborts the
// communicator (ncclCommAbort) and throws RankAborted (exit 1). A rank that fails
// (its transport destroyed by an exception) writes the notice and aborts its
// communicator; under mpirun, its exit without MPI_Finalize also ends the job.
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <exception>
#include <fstream>
#include <stdexcept>
#include <string>
#include <thread>

#include "cuda_check.hpp"
#include "poll_wait.hpp"
#include "transport.hpp"

#ifdef MOEHUB_HAVE_NCCL
#include <nccl.h>
#endif
#ifdef MOEHUB_HAVE_MPI
#include <mpi.h>
#endif

namespace moehub::gpu {

#ifndef MOEHUB_HAVE_NCCL
bool have_nccl() { return false; }
std::unique_ptr<Transport> make_nccl_transport(const std::string&) {
  throw std::runtime_error("this moehub-gpu was built without NCCL: only --transport folded is available");
}
#else
bool have_nccl() { return true; }

namespace {

#define MOEHUB_NCCL_CHECK(call)                                                                    \
  do {                                                                                             \
    const ncclResult_t r_ = (call);                                                                \
    if (r_ != ncclSuccess) ::moehub::gpu::fail_call(#call, ncclGetErrorString(r_), __FILE__, __LINE__); \
  } while (0)

int env_int(const char* a, const char* b, int fallback) {
  for (const char* n : {a, b}) {
    if (const char* v = std::getenv(n)) return std::atoi(v);
  }
  return fallback;
}

class NcclTransport final : public Transport {
 public:
  explicit NcclTransport(const std::string& dir) {
    // MPI (when built with it) unless MOEHUB_RANK is set: then the environment and a file
    // in the rendezvous directory, as in a build without MPI
#ifdef MOEHUB_HAVE_MPI
    use_mpi_ = std::getenv("MOEHUB_RANK") == nullptr;
#endif
    if (use_mpi_) {
#ifdef MOEHUB_HAVE_MPI
      int inited = 0;
      MPI_Initialized(&inited);
      if (!inited) MPI_Init(nullptr, nullptr);
      MPI_Comm_rank(MPI_COMM_WORLD, &rank_);
      MPI_Comm_size(MPI_COMM_WORLD, &n_);
#endif
    } else {
      rank_ = env_int("MOEHUB_RANK", "RANK", -1);
      n_ = env_int("MOEHUB_WORLD_SIZE", "WORLD_SIZE", -1);
      if (rank_ < 0 || n_ < 1) {
        rank_ = env_int("OMPI_COMM_WORLD_RANK", "PMI_RANK", -1);
        n_ = env_int("OMPI_COMM_WORLD_SIZE", "PMI_SIZE", -1);
      }
      if (rank_ < 0 || n_ < 1 || rank_ >= n_)
        throw std::runtime_error("NCCL transport: rank/size not found (MOEHUB_RANK/MOEHUB_WORLD_SIZE, OMPI_COMM_WORLD_RANK/SIZE or PMI_RANK/SIZE)");
    }
    int devices = 0;
    MOEHUB_CUDA_CHECK(cudaGetDeviceCount(&devices));
    const int local = env_int("OMPI_COMM_WORLD_LOCAL_RANK", "MPI_LOCALRANKID", rank_);
    device_ = local % devices;
    MOEHUB_CUDA_CHECK(cudaSetDevice(device_));
    ncclUniqueId id;
    if (use_mpi_) {
#ifdef MOEHUB_HAVE_MPI
      if (rank_ == 0) MOEHUB_NCCL_CHECK(ncclGetUniqueId(&id));
      MPI_Bcast(&id, sizeof(id), MPI_BYTE, 0, MPI_COMM_WORLD);
#endif
    } else {
      id = id_from_rendezvous(dir);
    }
    if (!dir.empty()) {
      char hex[17];
      std::uint64_t tag = 0;
      std::memcpy(&tag, id.internal, sizeof tag);  // the bootstrap's random magic number
      std::snprintf(hex, sizeof hex, "%016llx", static_cast<unsigned long long>(tag));
      abort_path_ = dir + "/moehub_abort_" + hex;
    }
    if (const char* t = std::getenv("MOEHUB_NCCL_TIMEOUT_S")) timeout_s_ = std::atoi(t);
    try {
      maybe_fail_on_purpose(rank_, "init");
    } catch (const std::exception& e) {
      abort(e.what());
      throw;
    }
    ncclConfig_t config = NCCL_CONFIG_INITIALIZER;
    config.blocking = 0;
    settle_result(ncclCommInitRankConfig(&comm_, n_, id, rank_, &config), "ncclCommInitRankConfig");
  }
  ~NcclTransport() override {
    // destroyed by an exception (this rank failed): tell the others instead of waiting
    // for them in ncclCommDestroy
    if (std::uncaught_exceptions() > uncaught_at_start_)
      abort("its command ended with an error (see that rank's output)");
    if (comm_) ncclCommDestroy(comm_);
#ifdef MOEHUB_HAVE_MPI
    int fin = 0;
    MPI_Finalized(&fin);
    if (use_mpi_ && !fin && !aborted_) MPI_Finalize();  // a failed rank exits without it: mpirun then ends the job
#endif
  }
  std::string name() const override { return "nccl"; }
  int size() const override { return n_; }
  std::vector<int> local_ranks() const override { return {rank_}; }
  int device_of(int) const override { return device_; }

  void wait(cudaStream_t stream) override {
    PollHooks hooks;
    hooks.done = [stream] {
      const cudaError_t e = cudaStreamQuery(stream);
      if (e == cudaErrorNotReady) return false;
      MOEHUB_CUDA_CHECK(e);
      return true;
    };
    hooks.failure = [this] { return failure(); };
    const std::string why = poll_until_done(hooks, timing());
    if (!why.empty()) fail(why);
  }

  void abort(const std::string& why) override {
    if (aborted_) return;
    aborted_ = true;
    if (!abort_path_.empty()) {  // the notice the other ranks poll for
      std::ofstream(abort_path_) << "rank " << rank_ << ": " << why << "\n";
    }
    if (comm_) ncclCommAbort(comm_);
    comm_ = nullptr;
  }

  void ring_exchange(std::vector<RingXfer>& x) override {
    for (auto& r : x) {
      const int next = (r.rank + 1) % n_, prev = (r.rank - 1 + n_) % n_;
      if (n_ == 1) {
        for (std::size_t i = 0; i < r.recv.size(); ++i)
          if (r.recv[i].bytes)
            MOEHUB_CUDA_CHECK(cudaMemcpyAsync(r.recv[i].ptr, r.send[i].ptr, r.recv[i].bytes, cudaMemcpyDeviceToDevice, r.stream));
        continue;
      }
      MOEHUB_NCCL_CHECK(ncclGroupStart());
      for (auto& s : r.send)
        if (s.bytes) MOEHUB_NCCL_CHECK(ncclSend(s.ptr, s.bytes, ncclInt8, next, comm_, r.stream));
      for (auto& s : r.recv)
        if (s.bytes) MOEHUB_NCCL_CHECK(ncclRecv(s.ptr, s.bytes, ncclInt8, prev, comm_, r.stream));
      group_end();
    }
  }

  void all_to_all(std::vector<A2AXfer>& x) override {
    for (auto& r : x) {
      const auto me = static_cast<std::size_t>(r.rank);
      for (std::size_t i = 0; i < r.recv[me].size(); ++i)
        if (r.recv[me][i].bytes)
          MOEHUB_CUDA_CHECK(cudaMemcpyAsync(r.recv[me][i].ptr, r.send[me][i].ptr, r.recv[me][i].bytes,
                                            cudaMemcpyDeviceToDevice, r.stream));
      MOEHUB_NCCL_CHECK(ncclGroupStart());
      for (int p = 0; p < n_; ++p) {
        if (p == r.rank) continue;
        for (auto& s : r.send[static_cast<std::size_t>(p)])
          if (s.bytes) MOEHUB_NCCL_CHECK(ncclSend(s.ptr, s.bytes, ncclInt8, p, comm_, r.stream));
        for (auto& s : r.recv[static_cast<std::size_t>(p)])
          if (s.bytes) MOEHUB_NCCL_CHECK(ncclRecv(s.ptr, s.bytes, ncclInt8, p, comm_, r.stream));
      }
      group_end();
    }
  }

  std::vector<char> all_gather_host(const std::vector<const void*>& send, std::size_t bytes,
                                    const std::vector<cudaStream_t>& streams) override {
    void* buf = nullptr;
    MOEHUB_CUDA_CHECK(cudaMallocAsync(&buf, bytes * static_cast<std::size_t>(n_), streams[0]));
    settle_result(ncclAllGather(send[0], buf, bytes, ncclInt8, comm_, streams[0]), "ncclAllGather");
    std::vector<char> out(bytes * static_cast<std::size_t>(n_));
    MOEHUB_CUDA_CHECK(cudaMemcpyAsync(out.data(), buf, out.size(), cudaMemcpyDeviceToHost, streams[0]));
    MOEHUB_CUDA_CHECK(cudaFreeAsync(buf, streams[0]));
    wait(streams[0]);
    return out;
  }

 private:
  /// Rank 0 writes a fresh unique id to DIR/moehub_nccl_id; the others wait for it.
  ncclUniqueId id_from_rendezvous(const std::string& dir) const {
    if (dir.empty()) throw std::runtime_error("NCCL transport without MPI needs --rendezvous DIR (a directory all ranks see)");
    ncclUniqueId id;
    const std::string path = dir + "/moehub_nccl_id";
    if (rank_ == 0) {
      MOEHUB_NCCL_CHECK(ncclGetUniqueId(&id));
      const std::string tmp = path + ".tmp";
      std::ofstream(tmp, std::ios::binary).write(reinterpret_cast<const char*>(&id), sizeof(id));
      if (std::rename(tmp.c_str(), path.c_str()) != 0) throw std::runtime_error("cannot write " + path);
      return id;
    }
    const auto t0 = std::chrono::steady_clock::now();
    for (;;) {
      std::ifstream in(path, std::ios::binary);
      if (in && in.read(reinterpret_cast<char*>(&id), sizeof(id))) return id;
      if (std::chrono::steady_clock::now() - t0 > std::chrono::seconds(120))
        throw std::runtime_error("NCCL transport: no id in " + path + " after 120 s");
      std::this_thread::sleep_for(std::chrono::milliseconds(100));
    }
  }
  PollTiming timing() const {
    PollTiming t;
    t.timeout = std::chrono::milliseconds(1000LL * timeout_s_);
    return t;
  }
  /// Why this rank must stop waiting ("" when nothing is wrong): an asynchronous NCCL
  /// error or another rank's abort notice (read at most every 100 ms).
  std::string failure() {
    ncclResult_t r = ncclSuccess;
    if (comm_ && ncclCommGetAsyncError(comm_, &r) == ncclSuccess && r != ncclSuccess && r != ncclInProgress)
      return std::string("NCCL asynchronous error: ") + ncclGetErrorString(r) + " (" + ncclGetLastError(comm_) + ")";
    const auto now = std::chrono::steady_clock::now();
    if (!abort_path_.empty() && now - last_notice_check_ >= std::chrono::milliseconds(100)) {
      last_notice_check_ = now;
      std::ifstream in(abort_path_);
      std::string line;
      if (in && std::getline(in, line)) return "another rank failed: " + line;
    }
    return "";
  }
  [[noreturn]] void fail(const std::string& why) {
    const std::string msg = "rank " + std::to_string(rank_) + " aborts its NCCL communicator: " + why;
    if (comm_) ncclCommAbort(comm_);
    comm_ = nullptr;
    aborted_ = true;  // the failed rank wrote the notice; this one only stops
    throw RankAborted(msg);
  }
  /// Non-blocking communicator: waits (polling) until the operations just issued are
  /// enqueued or the communicator is initialised.
  void settle(const char* what) {
    PollHooks hooks;
    hooks.done = [this, what] {
      ncclResult_t r = ncclSuccess;
      MOEHUB_NCCL_CHECK(ncclCommGetAsyncError(comm_, &r));
      if (r == ncclInProgress) return false;
      if (r != ncclSuccess) fail(std::string(what) + ": " + ncclGetErrorString(r));
      return true;
    };
    hooks.failure = [this] { return failure(); };
    const std::string why = poll_until_done(hooks, timing());
    if (!why.empty()) fail(why);
  }
  void settle_result(ncclResult_t r, const char* what) {
    if (r == ncclInProgress) return settle(what);
    if (r != ncclSuccess) fail(std::string(what) + ": " + ncclGetErrorString(r));
  }
  void group_end() { settle_result(ncclGroupEnd(), "ncclGroupEnd"); }

  int rank_ = 0, n_ = 1, device_ = 0;
  int timeout_s_ = 300;  // MOEHUB_NCCL_TIMEOUT_S
  bool aborted_ = false, use_mpi_ = false;
  int uncaught_at_start_ = std::uncaught_exceptions();
  std::string abort_path_;
  std::chrono::steady_clock::time_point last_notice_check_{};
  ncclComm_t comm_{};
};

}  // namespace

std::unique_ptr<Transport> make_nccl_transport(const std::string& dir) {
  return std::make_unique<NcclTransport>(dir);
}
#endif

}  // namespace moehub::gpu
