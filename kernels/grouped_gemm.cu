// Grouped bf16 GEMM on Hopper: TMA + mbarrier pipeline + wgmma, persistent tiles.
// See grouped_gemm.hpp for the contract and the design.
#include "grouped_gemm.hpp"

#include <cuda.h>
#include <cudaTypedefs.h>
#include <cuda_bf16.h>

#include <climits>
#include <cstdint>
#include <mutex>
#include <vector>

namespace moehub::kernels {
namespace {

constexpr int kBM = 128, kBN = 256, kBK = 64, kStages = 4;
constexpr int kThreads = 384;                   // warpgroup 0 produces, 1 and 2 consume
constexpr int kABytes = kBM * kBK * 2;          // 16 KiB per stage
constexpr int kBBytes = kBN * kBK * 2;          // 32 KiB per stage
constexpr int kChunkBytes = kBK * 64 * 2;       // one 64-column chunk of a [k][n] B tile
constexpr int kStagingRow = 64 * 2 + 16;         // one staged row of a 64-column slab, padded: no bank conflicts
constexpr int kStagingBytes = 64 * kStagingRow;   // per consumer warpgroup
constexpr int kSmemBytes = kStages * (kABytes + kBBytes) + 2 * kStagingBytes + 2 * kStages * 8 + 1024;  // + barriers, alignment

struct Params {
  int groups;
  int tiles_total;
  int k_blocks;
  int n;
  __nv_bfloat16* c;
  int tile_start[kGroupedGemmMaxGroups + 1];  // first tile of each group; [groups] = tiles_total
  int row_start[kGroupedGemmMaxGroups + 1];   // first row of each group; [groups] = rows in all
};

// Byte strides of the shared-memory operand layouts (128-byte swizzle atoms of 8 rows).
// K-major tiles (A, and B stored [n][k]): rows of 64 K-elements, 8-row groups 1024 B apart.
// MN-major B (stored [k][n]): rows of 64 N-elements per k, 8-k-row groups 1024 B apart,
// 64-column chunks kChunkBytes apart.
// In the descriptor of an MN-major operand the leading byte offset steps between 64-column
// chunks and the stride byte offset between 8-row groups along K.
constexpr std::uint32_t kSbo = 1024;
constexpr std::uint32_t kMnLbo = kChunkBytes;
constexpr std::uint32_t kMnSbo = 1024;

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
// wgmma shared-memory matrix descriptor, 128-byte swizzle.
__device__ __forceinline__ std::uint64_t make_desc(std::uint32_t addr, std::uint32_t lbo, std::uint32_t sbo) {
  return static_cast<std::uint64_t>((addr & 0x3FFFFu) >> 4) | (static_cast<std::uint64_t>((lbo >> 4) & 0x3FFFu) << 16) |
         (static_cast<std::uint64_t>((sbo >> 4) & 0x3FFFu) << 32) | (1ull << 62);
}
__device__ __forceinline__ void fence_acc(float (&d)[128]) {
#pragma unroll
  for (int i = 0; i < 128; ++i) asm volatile("" : "+f"(d[i])::"memory");
}

#define MOEHUB_WGMMA_M64N256K16(TNSP_B) \
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
      "}, %128, %129, p, 1, 1, 0, " #TNSP_B ";\n}\n" \
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
  MOEHUB_WGMMA_M64N256K16(0);
}
// B stored [k][n]: MN-major in shared memory, transposed by the instruction.
__device__ __forceinline__ void wgmma_kn(float (&d)[128], std::uint64_t desc_a, std::uint64_t desc_b, int scale_d) {
  MOEHUB_WGMMA_M64N256K16(1);
}

// Group of a flat tile index: the last group whose first tile is <= t (groups without
// tiles share their first tile with the next group and are skipped).
__device__ __forceinline__ int group_of(const Params& p, int t) {
  int lo = 0, hi = p.groups - 1;
  while (lo < hi) {
    const int mid = (lo + hi + 1) >> 1;
    if (p.tile_start[mid] <= t)
      lo = mid;
    else
      hi = mid - 1;
  }
  return lo;
}
#endif  // MOEHUB_GG_DEVICE

template <bool kBnk>
__global__ void __launch_bounds__(kThreads, 1)
    grouped_gemm_kernel(const __grid_constant__ CUtensorMap map_a, const __grid_constant__ CUtensorMap map_b,
                        const __grid_constant__ Params p) {
#ifdef MOEHUB_GG_DEVICE
  extern __shared__ unsigned char smem_raw[];
  const std::uint32_t base = (smem_u32(smem_raw) + 1023u) & ~1023u;
  const std::uint32_t sa = base;                         // kStages x A tile
  const std::uint32_t sb = base + kStages * kABytes;     // kStages x B tile
  const std::uint32_t stg = sb + kStages * kBBytes;      // 2 x epilogue staging
  const std::uint32_t bars = stg + 2 * kStagingBytes;    // full[kStages], empty[kStages]
  auto full = [&](int s) { return bars + 8u * static_cast<std::uint32_t>(s); };
  auto empty = [&](int s) { return bars + 8u * static_cast<std::uint32_t>(kStages + s); };
  const int wg = static_cast<int>(threadIdx.x) / 128;
  if (threadIdx.x == 0) {
    for (int s = 0; s < kStages; ++s) {
      mbar_init(full(s), 1);
      mbar_init(empty(s), 8);  // one arrival per consumer warp
    }
    asm volatile("fence.mbarrier_init.release.cluster;\n" ::: "memory");
  }
  __syncthreads();

  if (wg == 0) {
    // producer: one thread streams the A and B tiles of every K block of this block's tiles
    asm volatile("setmaxnreg.dec.sync.aligned.u32 40;\n");
    if (threadIdx.x == 0) {
      int s = 0;
      std::uint32_t phase = 0;
      for (int t = static_cast<int>(blockIdx.x); t < p.tiles_total; t += static_cast<int>(gridDim.x)) {
        const int g = group_of(p, t);
        const int local = t - p.tile_start[g];
        const int tiles_m = (p.row_start[g + 1] - p.row_start[g] + kBM - 1) / kBM;
        const int row0 = p.row_start[g] + (local % tiles_m) * kBM;
        const int n0 = (local / tiles_m) * kBN;
        for (int kb = 0; kb < p.k_blocks; ++kb) {
          mbar_wait(empty(s), phase ^ 1u);
          mbar_expect_tx(full(s), kABytes + kBBytes);
          tma_2d(sa + static_cast<std::uint32_t>(s) * kABytes, &map_a, kb * kBK, row0, full(s));
          const std::uint32_t b_dst = sb + static_cast<std::uint32_t>(s) * kBBytes;
          if constexpr (kBnk) {
            tma_3d(b_dst, &map_b, kb * kBK, n0, g, full(s));
          } else {
#pragma unroll
            for (int j = 0; j < kBN / 64; ++j)
              tma_3d(b_dst + static_cast<std::uint32_t>(j) * kChunkBytes, &map_b, n0 + 64 * j, kb * kBK, g, full(s));
          }
          if (++s == kStages) {
            s = 0;
            phase ^= 1u;
          }
        }
      }
    }
    return;
  }

  // consumers: warpgroup 1 computes rows 0..63 of the tile, warpgroup 2 rows 64..127
  asm volatile("setmaxnreg.inc.sync.aligned.u32 232;\n");
  const int cw = wg - 1;
  const int warp = (static_cast<int>(threadIdx.x) % 128) / 32;
  const int lane = static_cast<int>(threadIdx.x) % 32;
  float d[128];
#pragma unroll
  for (int i = 0; i < 128; ++i) d[i] = 0.f;
  int s = 0;
  std::uint32_t phase = 0;
  for (int t = static_cast<int>(blockIdx.x); t < p.tiles_total; t += static_cast<int>(gridDim.x)) {
    const int g = group_of(p, t);
    const int local = t - p.tile_start[g];
    const int rows_g = p.row_start[g + 1] - p.row_start[g];
    const int tiles_m = (rows_g + kBM - 1) / kBM;
    const int m0 = (local % tiles_m) * kBM;
    const int n0 = (local / tiles_m) * kBN;
    int prev = -1;
    for (int kb = 0; kb < p.k_blocks; ++kb) {
      mbar_wait(full(s), phase);
      const std::uint32_t a_addr = sa + static_cast<std::uint32_t>(s) * kABytes + static_cast<std::uint32_t>(cw) * (kABytes / 2);
      const std::uint32_t b_addr = sb + static_cast<std::uint32_t>(s) * kBBytes;
      asm volatile("wgmma.fence.sync.aligned;\n" ::: "memory");
      fence_acc(d);
#pragma unroll
      for (int kk = 0; kk < kBK / 16; ++kk) {
        const std::uint64_t da = make_desc(a_addr + static_cast<std::uint32_t>(kk) * 32u, 16u, kSbo);
        const int scale = (kb > 0 || kk > 0) ? 1 : 0;
        if constexpr (kBnk) {
          wgmma_nk(d, da, make_desc(b_addr + static_cast<std::uint32_t>(kk) * 32u, 16u, kSbo), scale);
        } else {
          wgmma_kn(d, da, make_desc(b_addr + static_cast<std::uint32_t>(kk) * 16u * 128u, kMnLbo, kMnSbo), scale);
        }
      }
      asm volatile("wgmma.commit_group.sync.aligned;\n" ::: "memory");
      fence_acc(d);
      // keep this K block's MMAs in flight; the previous block's are done: free its stage
      asm volatile("wgmma.wait_group.sync.aligned 1;\n" ::: "memory");
      fence_acc(d);
      if (prev >= 0 && lane == 0) mbar_arrive(empty(prev));
      prev = s;
      if (++s == kStages) {
        s = 0;
        phase ^= 1u;
      }
    }
    asm volatile("wgmma.wait_group.sync.aligned 0;\n" ::: "memory");
    fence_acc(d);
    if (prev >= 0 && lane == 0) mbar_arrive(empty(prev));

    // epilogue, in four 64-column slabs: the fragments go to this warpgroup's staging
    // buffer (row (r, cols c, c+1) of n8 block j sits in d[4j..4j+3]), then each thread
    // stores 16-byte pieces of whole rows, so that every row of the slab leaves as one
    // 128-byte run (rows past the group and columns past n are masked)
    const std::uint32_t stage_buf = stg + static_cast<std::uint32_t>(cw) * kStagingBytes;
    const int tid = static_cast<int>(threadIdx.x) % 128;
    const int fr = warp * 16 + lane / 4;  // fragment row in the warpgroup's 64 rows
#pragma unroll
    for (int slab = 0; slab < kBN / 64; ++slab) {
#pragma unroll
      for (int jj = 0; jj < 8; ++jj) {
        const int j = slab * 8 + jj;
        const std::uint32_t off = static_cast<std::uint32_t>(fr * kStagingRow + (jj * 8 + 2 * (lane % 4)) * 2);
        const __nv_bfloat162 lo = __floats2bfloat162_rn(d[4 * j], d[4 * j + 1]);
        const __nv_bfloat162 hi = __floats2bfloat162_rn(d[4 * j + 2], d[4 * j + 3]);
        asm volatile("st.shared.b32 [%0], %1;\n" ::"r"(stage_buf + off), "r"(*reinterpret_cast<const std::uint32_t*>(&lo)));
        asm volatile("st.shared.b32 [%0], %1;\n" ::"r"(stage_buf + off + 8u * kStagingRow),
                     "r"(*reinterpret_cast<const std::uint32_t*>(&hi)));
      }
      asm volatile("bar.sync %0, 128;\n" ::"r"(1 + cw) : "memory");
#pragma unroll
      for (int it = 0; it < 4; ++it) {
        const int piece = it * 128 + tid;  // 64 rows x 8 pieces of 16 bytes
        const int row = piece / 8, c16 = piece % 8;
        const int grow = m0 + cw * 64 + row;
        const int col = n0 + slab * 64 + c16 * 8;
        std::uint32_t v0, v1, v2, v3;
        asm volatile("ld.shared.v4.b32 {%0, %1, %2, %3}, [%4];\n"
                     : "=r"(v0), "=r"(v1), "=r"(v2), "=r"(v3)
                     : "r"(stage_buf + static_cast<std::uint32_t>(row * kStagingRow + c16 * 16)));
        if (grow < rows_g && col < p.n) {
          auto* dst = p.c + (static_cast<long long>(p.row_start[g]) + grow) * p.n + col;
          asm volatile("st.global.v4.b32 [%0], {%1, %2, %3, %4};\n" ::"l"(dst), "r"(v0), "r"(v1), "r"(v2), "r"(v3)
                       : "memory");
        }
      }
      asm volatile("bar.sync %0, 128;\n" ::"r"(1 + cw) : "memory");
    }
  }
#endif  // MOEHUB_GG_DEVICE
}

PFN_cuTensorMapEncodeTiled_v12000 encode_fn() {
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
  bool smem_set = false;
};
DeviceInfo& device_info() {
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
  }
  return i;
}

bool aligned16(const void* p) { return reinterpret_cast<std::uintptr_t>(p) % 16 == 0; }

}  // namespace

std::string grouped_gemm_unsupported(const GroupedGemmArgs& a) {
  // the call's shape first (no device needed), then the device
  if (a.rows.empty()) return "no groups";
  if (a.rows.size() > static_cast<std::size_t>(kGroupedGemmMaxGroups))
    return "more than " + std::to_string(kGroupedGemmMaxGroups) + " groups";
  if (a.n <= 0 || a.k <= 0) return "n and k must be positive";
  if (a.n % 8 != 0 || a.k % 8 != 0) return "n and k must be multiples of 8 (16-byte rows for the tensor copies)";
  if (!aligned16(a.a) || !aligned16(a.b) || !aligned16(a.c)) return "A, B and C must be 16-byte aligned";
  long long rows = 0, tiles = 0;
  const long long tiles_n = (a.n + kBN - 1) / kBN;
  for (std::int64_t m : a.rows) {
    if (m < 0) return "negative row count";
    rows += m;
    tiles += (m + kBM - 1) / kBM * tiles_n;
  }
  if (rows + kBM > INT_MAX || a.n > INT_MAX / 2 || a.k > INT_MAX / 2 || tiles > INT_MAX)
    return "sizes past 32-bit tile coordinates";
  const DeviceInfo& dev = device_info();
  if (dev.major != 9 || dev.minor != 0)
    return "needs an sm_90 GPU (" +
           (dev.major == 0 ? std::string("no CUDA device") : "this one is sm_" + std::to_string(dev.major) + std::to_string(dev.minor)) +
           ")";
  if (!encode_fn()) return "the driver has no cuTensorMapEncodeTiled";
  return {};
}

cudaError_t grouped_gemm_bf16(const GroupedGemmArgs& a, cudaStream_t stream) {
  if (!grouped_gemm_unsupported(a).empty()) return cudaErrorNotSupported;
  DeviceInfo& dev = device_info();
  Params p{};
  p.groups = static_cast<int>(a.rows.size());
  p.n = static_cast<int>(a.n);
  p.k_blocks = static_cast<int>((a.k + kBK - 1) / kBK);
  p.c = static_cast<__nv_bfloat16*>(a.c);
  const int tiles_n = static_cast<int>((a.n + kBN - 1) / kBN);
  int tiles = 0, rows = 0;
  for (int g = 0; g < p.groups; ++g) {
    p.tile_start[g] = tiles;
    p.row_start[g] = rows;
    const int m = static_cast<int>(a.rows[static_cast<std::size_t>(g)]);
    tiles += (m + kBM - 1) / kBM * tiles_n;
    rows += m;
  }
  p.tile_start[p.groups] = tiles;
  p.row_start[p.groups] = rows;
  p.tiles_total = tiles;
  if (tiles == 0) return cudaSuccess;

  auto encode = encode_fn();
  const auto n = static_cast<cuuint64_t>(a.n), k = static_cast<cuuint64_t>(a.k);
  CUtensorMap map_a{}, map_b{};
  {
    // A: [rows][k]; box 64 (k) x 128 (rows); rows past the end read as zeros
    const cuuint64_t dim[2] = {k, static_cast<cuuint64_t>(rows)};
    const cuuint64_t stride[1] = {k * 2};
    const cuuint32_t box[2] = {kBK, kBM};
    const cuuint32_t estride[2] = {1, 1};
    if (encode(&map_a, CU_TENSOR_MAP_DATA_TYPE_BFLOAT16, 2, const_cast<void*>(a.a), dim, stride, box, estride,
               CU_TENSOR_MAP_INTERLEAVE_NONE, CU_TENSOR_MAP_SWIZZLE_128B, CU_TENSOR_MAP_L2_PROMOTION_L2_256B,
               CU_TENSOR_MAP_FLOAT_OOB_FILL_NONE) != CUDA_SUCCESS)
      return cudaErrorInvalidValue;
  }
  {
    // B: groups of [n][k] (box 64 (k) x 256 (n)) or [k][n] (box 64 (n) x 64 (k), four per tile)
    const cuuint64_t groups = static_cast<cuuint64_t>(p.groups);
    const cuuint64_t dim_nk[3] = {k, n, groups}, dim_kn[3] = {n, k, groups};
    const cuuint64_t stride_nk[2] = {k * 2, n * k * 2}, stride_kn[2] = {n * 2, n * k * 2};
    const cuuint32_t box_nk[3] = {kBK, kBN, 1}, box_kn[3] = {64, kBK, 1};
    const cuuint32_t estride[3] = {1, 1, 1};
    if (encode(&map_b, CU_TENSOR_MAP_DATA_TYPE_BFLOAT16, 3, const_cast<void*>(a.b), a.b_nk ? dim_nk : dim_kn,
               a.b_nk ? stride_nk : stride_kn, a.b_nk ? box_nk : box_kn, estride, CU_TENSOR_MAP_INTERLEAVE_NONE,
               CU_TENSOR_MAP_SWIZZLE_128B, CU_TENSOR_MAP_L2_PROMOTION_L2_256B,
               CU_TENSOR_MAP_FLOAT_OOB_FILL_NONE) != CUDA_SUCCESS)
      return cudaErrorInvalidValue;
  }
  const int grid = tiles < dev.sms ? tiles : dev.sms;
  if (!dev.smem_set) {
    for (const cudaError_t e :
         {cudaFuncSetAttribute(grouped_gemm_kernel<true>, cudaFuncAttributeMaxDynamicSharedMemorySize, kSmemBytes),
          cudaFuncSetAttribute(grouped_gemm_kernel<false>, cudaFuncAttributeMaxDynamicSharedMemorySize, kSmemBytes)})
      if (e != cudaSuccess) return e;
    dev.smem_set = true;
  }
  if (a.b_nk)
    grouped_gemm_kernel<true><<<grid, kThreads, kSmemBytes, stream>>>(map_a, map_b, p);
  else
    grouped_gemm_kernel<false><<<grid, kThreads, kSmemBytes, stream>>>(map_a, map_b, p);
  return cudaGetLastError();
}

}  // namespace moehub::kernels
