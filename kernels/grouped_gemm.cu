// Grouped bf16 GEMM on Hopper: TMA + mbarrier pipeline + wgmma, persistent tiles.
// See grouped_gemm.hpp for the contract and the design.
#include "grouped_gemm.hpp"

#include <cuda_bf16.h>

#include <climits>
#include <cstdint>
#include <string>
#include <vector>

#include "grouped_gemm_common.cuh"

namespace moehub::kernels {
namespace {

using namespace gg;

constexpr int kBM = 128, kBN = 256, kBK = 64, kStages = 4;
constexpr int kThreads = 384;                   // warpgroup 0 produces, 1 and 2 consume
constexpr int kABytes = kBM * kBK * 2;          // 16 KiB per stage
constexpr int kBBytes = kBN * kBK * 2;          // 32 KiB per stage
constexpr int kChunkBytes = kBK * 64 * 2;       // one 64-column chunk of a [k][n] B tile
constexpr int kStagingRow = 64 * 2 + 16;         // one staged row of a 64-column slab, padded: no bank conflicts
constexpr int kSlabBytes = 64 * 128;              // one 64 x 64 bf16 slab for the tensor store, 128-byte rows
constexpr int kStagingBytes = 2 * kSlabBytes;     // per consumer warpgroup: two slabs, or one padded staged slab
static_assert(kStagingBytes >= 64 * kStagingRow, "the thread-store staging must fit the slab buffers");
constexpr int kSmemBytes = kStages * (kABytes + kBBytes) + 2 * kStagingBytes + 2 * kStages * 8 + 1024;  // + barriers, alignment

struct Params {
  int groups;
  int tiles_total;
  int k_blocks;
  int n;
  int tma_store;  // whole 64-row halves of a tile leave through the tensor copy engine
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

#ifdef MOEHUB_GG_DEVICE
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
                        const __grid_constant__ CUtensorMap map_c, const __grid_constant__ Params p) {
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

    const std::uint32_t stage_buf = stg + static_cast<std::uint32_t>(cw) * kStagingBytes;
    const int tid = static_cast<int>(threadIdx.x) % 128;
    const int fr = warp * 16 + lane / 4;  // fragment row in the warpgroup's 64 rows
    if (p.tma_store && m0 + cw * 64 + 64 <= rows_g) {
      // this warpgroup's 64 rows all belong to the group: four 64 x 64 slabs leave through
      // the tensor copy engine from two 128-byte-swizzled buffers (16-byte piece c of row r
      // at c ^ (r % 8), no bank conflicts), so the warps write slab s while slab s - 1 is
      // still being read out and go on to the next tile's MMAs while the last ones drain.
      // (A half that runs past the group's last row takes the thread stores below: the
      // engine clips only at the end of C, and the rows after the group are the next one's.)
#pragma unroll
      for (int slab = 0; slab < kBN / 64; ++slab) {
        const std::uint32_t buf = stage_buf + static_cast<std::uint32_t>(slab % 2) * kSlabBytes;
        slab_wait_free(tid, 1 + cw);
        write_bf16_slab<0>(d, slab, buf, lane, fr);
        slab_ready(1 + cw);
        if (tid == 0) {
          asm volatile("cp.async.bulk.tensor.2d.global.shared::cta.bulk_group [%0, {%1, %2}], [%3];\n" ::"l"(
                           reinterpret_cast<std::uint64_t>(&map_c)),
                       "r"(n0 + slab * 64), "r"(p.row_start[g] + m0 + cw * 64), "r"(buf)
                       : "memory");
          asm volatile("cp.async.bulk.commit_group;\n" ::: "memory");
        }
      }
      continue;
    }
    // epilogue, in four 64-column slabs: the fragments go to this warpgroup's staging
    // buffer (row (r, cols c, c+1) of n8 block j sits in d[4j..4j+3]), then each thread
    // stores 16-byte pieces of whole rows, so that every row of the slab leaves as one
    // 128-byte run (rows past the group and columns past n are masked). Tensor stores of
    // an earlier tile may still be reading the buffer: they finish first.
    if (p.tma_store) {
      if (tid == 0) asm volatile("cp.async.bulk.wait_group.read 0;\n" ::: "memory");
      asm volatile("bar.sync %0, 128;\n" ::"r"(1 + cw) : "memory");
    }
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
  // the tensor stores must be complete before the block (and its shared memory) ends
  if (p.tma_store && (threadIdx.x % 128) == 0) asm volatile("cp.async.bulk.wait_group 0;\n" ::: "memory");
#endif  // MOEHUB_GG_DEVICE
}

// Whether whole 64-row halves of C tiles leave through the tensor copy engine:
// MOEHUB_GEMM_EPILOGUE=tma or threads when set (read at every call, for comparisons,
// scripts/gpu/torch_grouped_mm.py); else the tensor copy engine.
bool forward_tma_epilogue() {
  return env_knob("MOEHUB_GEMM_EPILOGUE") != "threads";
}

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
  CUtensorMap map_a{}, map_b{}, map_c{};
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
  p.tma_store = forward_tma_epilogue() ? 1 : 0;
  if (p.tma_store) {
    // C: [rows][n] bf16; box 64 (n) x 64 (rows), 128-byte swizzle; the engine clips columns
    // past n (a tile's rows past its group take the thread stores)
    const cuuint64_t dim[2] = {n, static_cast<cuuint64_t>(rows)};
    const cuuint64_t stride[1] = {n * 2};
    const cuuint32_t box[2] = {64, 64};
    const cuuint32_t estride[2] = {1, 1};
    if (encode(&map_c, CU_TENSOR_MAP_DATA_TYPE_BFLOAT16, 2, a.c, dim, stride, box, estride,
               CU_TENSOR_MAP_INTERLEAVE_NONE, CU_TENSOR_MAP_SWIZZLE_128B, CU_TENSOR_MAP_L2_PROMOTION_NONE,
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
    grouped_gemm_kernel<true><<<grid, kThreads, kSmemBytes, stream>>>(map_a, map_b, map_c, p);
  else
    grouped_gemm_kernel<false><<<grid, kThreads, kSmemBytes, stream>>>(map_a, map_b, map_c, p);
  return cudaGetLastError();
}

}  // namespace moehub::kernels
