// NCCL transport: one rank per GPU, point-to-point send/receive for the ring and grouped
// send/receive for the all-to-all. The NCCL unique id travels through MPI when built
// with it, else through a file in a rendezvous directory.
#include <chrono>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <stdexcept>
#include <string>
#include <thread>

#include "cuda_check.hpp"
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
#ifdef MOEHUB_HAVE_MPI
    int inited = 0;
    MPI_Initialized(&inited);
    if (!inited) MPI_Init(nullptr, nullptr);
    MPI_Comm_rank(MPI_COMM_WORLD, &rank_);
    MPI_Comm_size(MPI_COMM_WORLD, &n_);
#else
    rank_ = env_int("OMPI_COMM_WORLD_RANK", "PMI_RANK", -1);
    n_ = env_int("OMPI_COMM_WORLD_SIZE", "PMI_SIZE", -1);
    if (rank_ < 0 || n_ < 1) {
      rank_ = env_int("MOEHUB_RANK", "RANK", -1);
      n_ = env_int("MOEHUB_WORLD_SIZE", "WORLD_SIZE", -1);
    }
    if (rank_ < 0 || n_ < 1 || rank_ >= n_)
      throw std::runtime_error("NCCL transport: rank/size not found (OMPI_COMM_WORLD_RANK/SIZE, PMI_RANK/SIZE or MOEHUB_RANK/MOEHUB_WORLD_SIZE)");
#endif
    int devices = 0;
    MOEHUB_CUDA_CHECK(cudaGetDeviceCount(&devices));
    const int local = env_int("OMPI_COMM_WORLD_LOCAL_RANK", "MPI_LOCALRANKID", rank_);
    device_ = local % devices;
    MOEHUB_CUDA_CHECK(cudaSetDevice(device_));
    ncclUniqueId id;
#ifdef MOEHUB_HAVE_MPI
    (void)dir;
    if (rank_ == 0) MOEHUB_NCCL_CHECK(ncclGetUniqueId(&id));
    MPI_Bcast(&id, sizeof(id), MPI_BYTE, 0, MPI_COMM_WORLD);
#else
    if (dir.empty()) throw std::runtime_error("NCCL transport without MPI needs --rendezvous DIR (a directory all ranks see)");
    const std::string path = dir + "/moehub_nccl_id";
    if (rank_ == 0) {
      MOEHUB_NCCL_CHECK(ncclGetUniqueId(&id));
      const std::string tmp = path + ".tmp";
      std::ofstream(tmp, std::ios::binary).write(reinterpret_cast<const char*>(&id), sizeof(id));
      if (std::rename(tmp.c_str(), path.c_str()) != 0) throw std::runtime_error("cannot write " + path);
    } else {
      const auto t0 = std::chrono::steady_clock::now();
      for (;;) {
        std::ifstream in(path, std::ios::binary);
        if (in && in.read(reinterpret_cast<char*>(&id), sizeof(id))) break;
        if (std::chrono::steady_clock::now() - t0 > std::chrono::seconds(120))
          throw std::runtime_error("NCCL transport: no id in " + path + " after 120 s");
        std::this_thread::sleep_for(std::chrono::milliseconds(100));
      }
    }
#endif
    MOEHUB_NCCL_CHECK(ncclCommInitRank(&comm_, n_, id, rank_));
  }
  ~NcclTransport() override {
    ncclCommDestroy(comm_);
#ifdef MOEHUB_HAVE_MPI
    int fin = 0;
    MPI_Finalized(&fin);
    if (!fin) MPI_Finalize();
#endif
  }
  std::string name() const override { return "nccl"; }
  int size() const override { return n_; }
  std::vector<int> local_ranks() const override { return {rank_}; }
  int device_of(int) const override { return device_; }

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
      MOEHUB_NCCL_CHECK(ncclGroupEnd());
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
      MOEHUB_NCCL_CHECK(ncclGroupEnd());
    }
  }

  std::vector<char> all_gather_host(const std::vector<const void*>& send, std::size_t bytes,
                                    const std::vector<cudaStream_t>& streams) override {
    void* buf = nullptr;
    MOEHUB_CUDA_CHECK(cudaMallocAsync(&buf, bytes * static_cast<std::size_t>(n_), streams[0]));
    MOEHUB_NCCL_CHECK(ncclAllGather(send[0], buf, bytes, ncclInt8, comm_, streams[0]));
    std::vector<char> out(bytes * static_cast<std::size_t>(n_));
    MOEHUB_CUDA_CHECK(cudaMemcpyAsync(out.data(), buf, out.size(), cudaMemcpyDeviceToHost, streams[0]));
    MOEHUB_CUDA_CHECK(cudaFreeAsync(buf, streams[0]));
    MOEHUB_CUDA_CHECK(cudaStreamSynchronize(streams[0]));
    return out;
  }

 private:
  int rank_ = 0, n_ = 1, device_ = 0;
  ncclComm_t comm_{};
};

}  // namespace

std::unique_ptr<Transport> make_nccl_transport(const std::string& dir) {
  return std::make_unique<NcclTransport>(dir);
}
#endif

}  // namespace moehub::gpu
