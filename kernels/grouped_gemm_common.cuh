// Pieces shared by the grouped GEMM kernels (grouped_gemm.cu: C = A op(B), and
// grouped_gemm_wgrad.cu: C = A^T B + beta C): the mbarrier, bulk tensor copy (TMA) and
// wgmma wrappers for sm_90a, the shared-memory descriptor, and the host's driver entry
// point and per-device properties. Internal to the kernels; not part of the public API.
#pragma once

#include <cuda.h>
#include <cuda_bf16.h>
#include <cudaTypedefs.h>
#include <cuda_runtime.h>

#include <cstdint>
#include <cstdlib>
#include <mutex>
#include <string>
#include <vector>

namespace moehub::kernels::gg {

#if defined(__CUDA_ARCH__) && defined(__CUDA_ARCH_FEAT_SM90_ALL)
#define MOEHUB_GG_DEVICE 1
#endif

#ifdef MOEHUB_GG_DEVICE
__device__ __forceinline__ std::uint32_t smem_u32(const void* p) {
  return static_cast<std::uint32_t>(__cvta_generic_to_shared(p));
}
__device__ __forceinline__ void mbar_init(std::uint32_t bar, int count) {
  asm volatile("mbarrier.init.shared::cta.b64 [%0], %1;\n" ::"r"(bar), "r"(count) : "memory");
}
__device__ __forceinline__ void mbar_wait(std::uint32_t bar, std::uint32_t parity) {
  std::uint32_t done = 0;
  do {
    asm volatile(
        "{\n.reg .pred p;\nmbarrier.try_wait.parity.shared::cta.b64 p, [%1], %2;\nselp.u32 %0, 1, 0, p;\n}\n"
        : "=r"(done)
        : "r"(bar), "r"(parity)
        : "memory");
  } while (!done);
}
__device__ __forceinline__ void mbar_expect_tx(std::uint32_t bar, std::uint32_t bytes) {
  asm volatile("mbarrier.arrive.expect_tx.shared::cta.b64 _, [%0], %1;\n" ::"r"(bar), "r"(bytes) : "memory");
}
__device__ __forceinline__ void mbar_arrive(std::uint32_t bar) {
  asm volatile("mbarrier.arrive.shared::cta.b64 _, [%0];\n" ::"r"(bar) : "memory");
}
__device__ __forceinline__ void tma_2d(std::uint32_t dst, const CUtensorMap* map, int c0, int c1, std::uint32_t bar) {
  asm volatile(
      "cp.async.bulk.tensor.2d.shared::cluster.global.tile.mbarrier::complete_tx::bytes [%0], [%1, {%2, %3}], [%4];\n" ::"r"(dst),
      "l"(reinterpret_cast<std::uint64_t>(map)), "r"(c0), "r"(c1), "r"(bar)
      : "memory");
}
__device__ __forceinline__ void tma_3d(std::uint32_t dst, const CUtensorMap* map, int c0, int c1, int c2,
                                       std::uint32_t bar) {
  asm volatile(
      "cp.async.bulk.tensor.3d.shared::cluster.global.tile.mbarrier::complete_tx::bytes [%0], [%1, {%2, %3, %4}], [%5];\n" ::"r"(dst),
      "l"(reinterpret_cast<std::uint64_t>(map)), "r"(c0), "r"(c1), "r"(c2), "r"(bar)
      : "memory");
}
// The epilogue's tensor-store slabs (both kernels): 64 rows x 128 bytes in one of a
// consumer warpgroup's two slab buffers, in the 128-byte swizzle of the tensor map (16-byte
// piece c of row r at piece c ^ (r % 8), which leaves no bank conflicts).
// Waits until the buffer about to be written is free (its slab of two stores ago, issued
// by thread tid 0, has been read out) and lines the warpgroup (named barrier bar) up.
__device__ __forceinline__ void slab_wait_free(int tid, int bar) {
  if (tid == 0) asm volatile("cp.async.bulk.wait_group.read 1;\n" ::: "memory");
  asm volatile("bar.sync %0, 128;\n" ::"r"(bar) : "memory");
}
// Makes the warpgroup's writes to a slab visible to the tensor copy engine before thread 0
// issues its store.
__device__ __forceinline__ void slab_ready(int bar) {
  asm volatile("fence.proxy.async.shared::cta;\n" ::: "memory");
  asm volatile("bar.sync %0, 128;\n" ::"r"(bar) : "memory");
}
// Writes 64 columns of a warpgroup's 64 rows of accumulators as bf16 (rounded to nearest
// even) into slab buffer buf: n8 blocks 8 slab .. 8 slab + 7, block j of row fr (fr + 8) in
// d[kD + 4j], d[kD + 4j + 1] (d[kD + 4j + 2], d[kD + 4j + 3]), fr = 16 warp + lane / 4.
template <int kD>
__device__ __forceinline__ void write_bf16_slab(const float (&d)[128], int slab, std::uint32_t buf, int lane,
                                                int fr) {
#pragma unroll
  for (int jj = 0; jj < 8; ++jj) {
    const int j = slab * 8 + jj;
    const std::uint32_t within = static_cast<std::uint32_t>((lane % 4) * 4);
#pragma unroll
    for (int hr = 0; hr < 2; ++hr) {
      const int r = fr + 8 * hr;
      const std::uint32_t addr = buf + static_cast<std::uint32_t>(r * 128 + ((jj ^ (r % 8)) * 16)) + within;
      const __nv_bfloat162 v = __floats2bfloat162_rn(d[kD + 4 * j + 2 * hr], d[kD + 4 * j + 2 * hr + 1]);
      asm volatile("st.shared.b32 [%0], %1;\n" ::"r"(addr), "r"(*reinterpret_cast<const std::uint32_t*>(&v)));
    }
  }
}
// wgmma shared-memory matrix descriptor, 128-byte swizzle.
__device__ __forceinline__ std::uint64_t make_desc(std::uint32_t addr, std::uint32_t lbo, std::uint32_t sbo) {
  return static_cast<std::uint64_t>((addr & 0x3FFFFu) >> 4) | (static_cast<std::uint64_t>((lbo >> 4) & 0x3FFFu) << 16) |
         (static_cast<std::uint64_t>((sbo >> 4) & 0x3FFFu) << 32) | (1ull << 62);
}
__device__ __forceinline__ void fence_acc(float (&d)[128]) {
#pragma unroll
  for (int i = 0; i < 128; ++i) asm volatile("" : "+f"(d[i])::"memory");
}

#define MOEHUB_WGMMA_M64N256K16(TNSP_A, TNSP_B) \
  asm volatile( \
      "{\n.reg .pred p;\nsetp.ne.b32 p, %130, 0;\n" \
      "wgmma.mma_async.sync.aligned.m64n256k16.f32.bf16.bf16 {" \
      "%0, %1, %2, %3, %4, %5, %6, %7, %8, %9, %10, %11, %12, %13, %14, %15," \
      "%16, %17, %18, %19, %20, %21, %22, %23, %24, %25, %26, %27, %28, %29, %30, %31," \
      "%32, %33, %34, %35, %36, %37, %38, %39, %40, %41, %42, %43, %44, %45, %46, %47," \
      "%48, %49, %50, %51, %52, %53, %54, %55, %56, %57, %58, %59, %60, %61, %62, %63," \
      "%64, %65, %66, %67, %68, %69, %70, %71, %72, %73, %74, %75, %76, %77, %78, %79," \
      "%80, %81, %82, %83, %84, %85, %86, %87, %88, %89, %90, %91, %92, %93, %94, %95," \
      "%96, %97, %98, %99, %100, %101, %102, %103, %104, %105, %106, %107, %108, %109, %110, %111," \
      "%112, %113, %114, %115, %116, %117, %118, %119, %120, %121, %122, %123, %124, %125, %126, %127" \
      "}, %128, %129, p, 1, 1, " #TNSP_A ", " #TNSP_B ";\n}\n" \
      : "+f"(d[0]), "+f"(d[1]), "+f"(d[2]), "+f"(d[3]), "+f"(d[4]), "+f"(d[5]), "+f"(d[6]), "+f"(d[7]), \
        "+f"(d[8]), "+f"(d[9]), "+f"(d[10]), "+f"(d[11]), "+f"(d[12]), "+f"(d[13]), "+f"(d[14]), "+f"(d[15]), \
        "+f"(d[16]), "+f"(d[17]), "+f"(d[18]), "+f"(d[19]), "+f"(d[20]), "+f"(d[21]), "+f"(d[22]), "+f"(d[23]), \
        "+f"(d[24]), "+f"(d[25]), "+f"(d[26]), "+f"(d[27]), "+f"(d[28]), "+f"(d[29]), "+f"(d[30]), "+f"(d[31]), \
        "+f"(d[32]), "+f"(d[33]), "+f"(d[34]), "+f"(d[35]), "+f"(d[36]), "+f"(d[37]), "+f"(d[38]), "+f"(d[39]), \
        "+f"(d[40]), "+f"(d[41]), "+f"(d[42]), "+f"(d[43]), "+f"(d[44]), "+f"(d[45]), "+f"(d[46]), "+f"(d[47]), \
        "+f"(d[48]), "+f"(d[49]), "+f"(d[50]), "+f"(d[51]), "+f"(d[52]), "+f"(d[53]), "+f"(d[54]), "+f"(d[55]), \
        "+f"(d[56]), "+f"(d[57]), "+f"(d[58]), "+f"(d[59]), "+f"(d[60]), "+f"(d[61]), "+f"(d[62]), "+f"(d[63]), \
        "+f"(d[64]), "+f"(d[65]), "+f"(d[66]), "+f"(d[67]), "+f"(d[68]), "+f"(d[69]), "+f"(d[70]), "+f"(d[71]), \
        "+f"(d[72]), "+f"(d[73]), "+f"(d[74]), "+f"(d[75]), "+f"(d[76]), "+f"(d[77]), "+f"(d[78]), "+f"(d[79]), \
        "+f"(d[80]), "+f"(d[81]), "+f"(d[82]), "+f"(d[83]), "+f"(d[84]), "+f"(d[85]), "+f"(d[86]), "+f"(d[87]), \
        "+f"(d[88]), "+f"(d[89]), "+f"(d[90]), "+f"(d[91]), "+f"(d[92]), "+f"(d[93]), "+f"(d[94]), "+f"(d[95]), \
        "+f"(d[96]), "+f"(d[97]), "+f"(d[98]), "+f"(d[99]), "+f"(d[100]), "+f"(d[101]), "+f"(d[102]), "+f"(d[103]), \
        "+f"(d[104]), "+f"(d[105]), "+f"(d[106]), "+f"(d[107]), "+f"(d[108]), "+f"(d[109]), "+f"(d[110]), "+f"(d[111]), \
        "+f"(d[112]), "+f"(d[113]), "+f"(d[114]), "+f"(d[115]), "+f"(d[116]), "+f"(d[117]), "+f"(d[118]), "+f"(d[119]), \
        "+f"(d[120]), "+f"(d[121]), "+f"(d[122]), "+f"(d[123]), "+f"(d[124]), "+f"(d[125]), "+f"(d[126]), "+f"(d[127]) \
      : "l"(desc_a), "l"(desc_b), "r"(scale_d))

// B stored [n][k]: K-major in shared memory, no transpose.
__device__ __forceinline__ void wgmma_nk(float (&d)[128], std::uint64_t desc_a, std::uint64_t desc_b, int scale_d) {
  MOEHUB_WGMMA_M64N256K16(0, 0);
}
// B stored [k][n]: MN-major in shared memory, transposed by the instruction.
__device__ __forceinline__ void wgmma_kn(float (&d)[128], std::uint64_t desc_a, std::uint64_t desc_b, int scale_d) {
  MOEHUB_WGMMA_M64N256K16(0, 1);
}

// A and B both MN-major in shared memory (A stored [k][m], B stored [k][n]), both
// transposed by the instruction: the weight-gradient GEMM X^T dY.
__device__ __forceinline__ void wgmma_tt(float (&d)[128], std::uint64_t desc_a, std::uint64_t desc_b, int scale_d) {
  MOEHUB_WGMMA_M64N256K16(1, 1);
}
// The same with n = 128: 64 accumulators per thread, d[OFF .. OFF + 63].
#define MOEHUB_WGMMA_M64N128K16(TNSP_A, TNSP_B, OFF) \
  asm volatile( \
      "{\n.reg .pred p;\nsetp.ne.b32 p, %66, 0;\n" \
      "wgmma.mma_async.sync.aligned.m64n128k16.f32.bf16.bf16 {" \
      "%0, %1, %2, %3, %4, %5, %6, %7, %8, %9, %10, %11, %12, %13, %14, %15," \
      "%16, %17, %18, %19, %20, %21, %22, %23, %24, %25, %26, %27, %28, %29, %30, %31," \
      "%32, %33, %34, %35, %36, %37, %38, %39, %40, %41, %42, %43, %44, %45, %46, %47," \
      "%48, %49, %50, %51, %52, %53, %54, %55, %56, %57, %58, %59, %60, %61, %62, %63" \
      "}, %64, %65, p, 1, 1, " #TNSP_A ", " #TNSP_B ";\n}\n" \
      : "+f"(d[OFF + 0]), "+f"(d[OFF + 1]), "+f"(d[OFF + 2]), "+f"(d[OFF + 3]), "+f"(d[OFF + 4]), "+f"(d[OFF + 5]), "+f"(d[OFF + 6]), "+f"(d[OFF + 7]), \
        "+f"(d[OFF + 8]), "+f"(d[OFF + 9]), "+f"(d[OFF + 10]), "+f"(d[OFF + 11]), "+f"(d[OFF + 12]), "+f"(d[OFF + 13]), "+f"(d[OFF + 14]), "+f"(d[OFF + 15]), \
        "+f"(d[OFF + 16]), "+f"(d[OFF + 17]), "+f"(d[OFF + 18]), "+f"(d[OFF + 19]), "+f"(d[OFF + 20]), "+f"(d[OFF + 21]), "+f"(d[OFF + 22]), "+f"(d[OFF + 23]), \
        "+f"(d[OFF + 24]), "+f"(d[OFF + 25]), "+f"(d[OFF + 26]), "+f"(d[OFF + 27]), "+f"(d[OFF + 28]), "+f"(d[OFF + 29]), "+f"(d[OFF + 30]), "+f"(d[OFF + 31]), \
        "+f"(d[OFF + 32]), "+f"(d[OFF + 33]), "+f"(d[OFF + 34]), "+f"(d[OFF + 35]), "+f"(d[OFF + 36]), "+f"(d[OFF + 37]), "+f"(d[OFF + 38]), "+f"(d[OFF + 39]), \
        "+f"(d[OFF + 40]), "+f"(d[OFF + 41]), "+f"(d[OFF + 42]), "+f"(d[OFF + 43]), "+f"(d[OFF + 44]), "+f"(d[OFF + 45]), "+f"(d[OFF + 46]), "+f"(d[OFF + 47]), \
        "+f"(d[OFF + 48]), "+f"(d[OFF + 49]), "+f"(d[OFF + 50]), "+f"(d[OFF + 51]), "+f"(d[OFF + 52]), "+f"(d[OFF + 53]), "+f"(d[OFF + 54]), "+f"(d[OFF + 55]), \
        "+f"(d[OFF + 56]), "+f"(d[OFF + 57]), "+f"(d[OFF + 58]), "+f"(d[OFF + 59]), "+f"(d[OFF + 60]), "+f"(d[OFF + 61]), "+f"(d[OFF + 62]), "+f"(d[OFF + 63]) \
      : "l"(desc_a), "l"(desc_b), "r"(scale_d))

// Both operands MN-major (as wgmma_tt), n = 128, into accumulators d[64 * H .. 64 * H + 63].
template <int H>
__device__ __forceinline__ void wgmma_tt_n128(float (&d)[128], std::uint64_t desc_a, std::uint64_t desc_b, int scale_d) {
  MOEHUB_WGMMA_M64N128K16(1, 1, 64 * H);
}
// One 16-byte shared-memory store of zeros.
__device__ __forceinline__ void st_shared_v4_zero(std::uint32_t addr) {
  asm volatile("st.shared.v4.b32 [%0], {%1, %1, %1, %1};\n" ::"r"(addr), "r"(0u) : "memory");
}
#endif  // MOEHUB_GG_DEVICE

// Host side: the driver's tensor-map encoder and the current device's properties.
inline PFN_cuTensorMapEncodeTiled_v12000 encode_fn() {
  static PFN_cuTensorMapEncodeTiled_v12000 fn = nullptr;
  static std::once_flag once;
  std::call_once(once, [] {
    void* p = nullptr;
    cudaDriverEntryPointQueryResult q{};
    if (cudaGetDriverEntryPointByVersion("cuTensorMapEncodeTiled", &p, 12000, cudaEnableDefault, &q) == cudaSuccess &&
        q == cudaDriverEntryPointSuccess)
      fn = reinterpret_cast<PFN_cuTensorMapEncodeTiled_v12000>(p);
  });
  return fn;
}

// The current device's properties and whether the kernels' shared-memory limit was raised
// on it, looked up once per device and thread: a launch is made per expert GEMM call, many
// per ring hop, so it should cost no driver queries beyond cudaGetDevice.
struct DeviceInfo {
  int device = -1;
  int major = 0, minor = 0, sms = 0;
  double dram_gbps = 0;         // peak DRAM bandwidth: 2 x memory clock x bus width (0: unknown)
  bool smem_set = false;        // grouped_gemm_bf16's shared-memory limit raised
  unsigned smem_set_wgrad = 0;  // grouped_gemm_wgrad's, one bit per kernel (schedule)
};
inline DeviceInfo& device_info() {
  static thread_local std::vector<DeviceInfo> known;
  static thread_local DeviceInfo none;
  int dev = 0;
  if (cudaGetDevice(&dev) != cudaSuccess) {
    cudaGetLastError();  // leave no sticky error behind for the caller
    none = DeviceInfo{};
    return none;
  }
  if (static_cast<std::size_t>(dev) >= known.size()) known.resize(static_cast<std::size_t>(dev) + 1);
  DeviceInfo& i = known[static_cast<std::size_t>(dev)];
  if (i.device < 0) {
    i.device = dev;
    cudaDeviceGetAttribute(&i.major, cudaDevAttrComputeCapabilityMajor, dev);
    cudaDeviceGetAttribute(&i.minor, cudaDevAttrComputeCapabilityMinor, dev);
    cudaDeviceGetAttribute(&i.sms, cudaDevAttrMultiProcessorCount, dev);
    int mem_khz = 0, bus_bits = 0;
    if (cudaDeviceGetAttribute(&mem_khz, cudaDevAttrMemoryClockRate, dev) == cudaSuccess &&
        cudaDeviceGetAttribute(&bus_bits, cudaDevAttrGlobalMemoryBusWidth, dev) == cudaSuccess) {
      i.dram_gbps = 2.0 * mem_khz * 1e3 * (bus_bits / 8.0) / 1e9;
    } else {
      cudaGetLastError();
    }
  }
  return i;
}

inline bool aligned16(const void* p) { return reinterpret_cast<std::uintptr_t>(p) % 16 == 0; }

// The value of a kernel switch read from the environment at every call (so that one process
// can time the variants side by side), empty when unset.
inline std::string env_knob(const char* name) {
  const char* v = std::getenv(name);
  return v ? v : "";
}


}  // namespace moehub::kernels::gg
