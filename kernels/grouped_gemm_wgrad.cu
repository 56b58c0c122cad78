// Weight-gradient grouped GEMM on Hopper, C_g = A_g^T B_g + beta C_g: TMA + mbarrier
// pipeline + wgmma with both operands transposed, persistent tiles over the groups sorted
// by their reduction length, in one of two schedules: both consumer warpgroups on one
// 128 x 256 tile (cooperative), or each on its own 128 x 128 tiles, taking turns so that one's
// epilogue overlaps the other's MMAs (ping-pong). See grouped_gemm.hpp for the contract and
// docs/gpu.md for the design.
#include <cuda_bf16.h>

#include <algorithm>
#include <cerrno>
#include <climits>
#include <cstdlib>
#include <string>
#include <cstdint>
#include <numeric>
#include <vector>

#include "grouped_gemm.hpp"
#include "grouped_gemm_common.cuh"

namespace moehub::kernels {
namespace {

using namespace gg;

constexpr int kBM = 128, kBN = 256, kBK = 64, kStages = 4;
constexpr int kThreads = 384;               // warpgroup 0 produces, 1 and 2 consume
constexpr int kBoxBytes = kBK * 64 * 2;     // one [64 rows][64 columns] bf16 box: 8 KiB
constexpr int kABytes = 2 * kBoxBytes;      // A tile: 128 output rows = 2 boxes
constexpr int kBBytes = 4 * kBoxBytes;      // B tile: 256 output columns = 4 boxes
constexpr int kSlabCols = 32;               // fp32 epilogue slab: 32 columns
constexpr int kStagingRow = kSlabCols * 4 + 16;  // padded staged row (thread stores): no bank conflicts
constexpr int kSlabBytes = 64 * kSlabCols * 4;    // one slab for the tensor store (32 fp32 or 64 bf16 columns): 8 KiB, 128-byte rows
constexpr int kStagingBytes = 2 * kSlabBytes;     // per consumer warpgroup: two slabs (>= 64 * kStagingRow)
static_assert(kStagingBytes >= 64 * kStagingRow, "the thread-store staging must fit the slab buffers");
constexpr int kSmemBytes = kStages * (kABytes + kBBytes) + 2 * kStagingBytes + 2 * kStages * 8 + 1024;
// MN-major operands: 64-column chunks kBoxBytes apart (leading byte offset), 8-row groups
// along K 1024 B apart (stride byte offset).
constexpr std::uint32_t kMnLbo = kBoxBytes;
constexpr std::uint32_t kMnSbo = 1024;

struct Params {
  int slots;            // groups with tiles, in walking order
  int tiles_per_group;  // tiles_m * tiles_n
  int tiles_m;
  int tiles_total;
  int m, n;
  int c_fp32;
  int tma_store;  // fp32 C with beta 0 or 1, bf16 C with beta 0: the epilogue stores (or adds) slabs with the tensor copy engine
  int snake;      // tile order over the blocks: block b takes position b of even rounds, G - 1 - b of odd ones
  float beta;
  void* c;
  int group[kGroupedGemmMaxGroups];     // slot -> group index (C_g = C + group * m * n)
  int row_start[kGroupedGemmMaxGroups]; // slot -> first row of the group in A and B
  int rows[kGroupedGemmMaxGroups];      // slot -> k_g
};

#ifdef MOEHUB_GG_DEVICE
// The tile (position in the walking order) that this block computes in its round r, or -1
// past the end. The G blocks take the positions of a round in block order (strided), or,
// with p.snake, in reverse order on odd rounds, so that a block that got one of a round's
// longer tiles gets one of the next round's shorter ones (the tiles are sorted by their
// reduction length, longest first).
__device__ __forceinline__ int tile_of(const Params& p, int r) {
  const long long g = gridDim.x, b = blockIdx.x;
  const long long pos = r * g + ((p.snake && (r & 1)) ? g - 1 - b : b);
  return pos < p.tiles_total ? static_cast<int>(pos) : -1;
}

// The thread-store epilogue's last step: 4 staged fp32 values of row grow, columns col..col+3
// of the group's C (from shared address src), plus beta * C, stored as fp32 or bf16; masked
// past m and n.
__device__ __forceinline__ void store_c4(const Params& p, long long c_group, int grow, int col, std::uint32_t src) {
  float v0, v1, v2, v3;
  asm volatile("ld.shared.v4.f32 {%0, %1, %2, %3}, [%4];\n" : "=f"(v0), "=f"(v1), "=f"(v2), "=f"(v3) : "r"(src));
  if (grow >= p.m || col >= p.n) return;
  const long long idx = c_group + static_cast<long long>(grow) * p.n + col;
  if (p.c_fp32) {
    float* dst = static_cast<float*>(p.c) + idx;
    if (p.beta != 0.f) {
      const float4 old = *reinterpret_cast<const float4*>(dst);
      v0 += p.beta * old.x;
      v1 += p.beta * old.y;
      v2 += p.beta * old.z;
      v3 += p.beta * old.w;
    }
    asm volatile("st.global.v4.f32 [%0], {%1, %2, %3, %4};\n" ::"l"(dst), "f"(v0), "f"(v1), "f"(v2), "f"(v3) : "memory");
  } else {
    __nv_bfloat16* dst = static_cast<__nv_bfloat16*>(p.c) + idx;
    if (p.beta != 0.f) {
      const uint2 raw = *reinterpret_cast<const uint2*>(dst);
      const float2 lo = __bfloat1622float2(*reinterpret_cast<const __nv_bfloat162*>(&raw.x));
      const float2 hi = __bfloat1622float2(*reinterpret_cast<const __nv_bfloat162*>(&raw.y));
      v0 += p.beta * lo.x;
      v1 += p.beta * lo.y;
      v2 += p.beta * hi.x;
      v3 += p.beta * hi.y;
    }
    const __nv_bfloat162 lo = __floats2bfloat162_rn(v0, v1);
    const __nv_bfloat162 hi = __floats2bfloat162_rn(v2, v3);
    asm volatile("st.global.v2.b32 [%0], {%1, %2};\n" ::"l"(dst), "r"(*reinterpret_cast<const std::uint32_t*>(&lo)),
                 "r"(*reinterpret_cast<const std::uint32_t*>(&hi))
                 : "memory");
  }
}

// Hands the slab in `buf` (written by the whole warpgroup) to the tensor copy engine: a store
// to C at (col, row, group), or with beta = 1 an add into it.
__device__ __forceinline__ void slab_issue(const Params& p, const CUtensorMap* map_c, std::uint32_t buf, int tid,
                                           int bar, int col, int row, int group) {
  slab_ready(bar);
  if (tid != 0) return;
  if (p.beta != 0.f)
    asm volatile("cp.reduce.async.bulk.tensor.3d.global.shared::cta.add.tile.bulk_group [%0, {%1, %2, %3}], [%4];\n" ::"l"(
                     reinterpret_cast<std::uint64_t>(map_c)),
                 "r"(col), "r"(row), "r"(group), "r"(buf)
                 : "memory");
  else
    asm volatile("cp.async.bulk.tensor.3d.global.shared::cta.bulk_group [%0, {%1, %2, %3}], [%4];\n" ::"l"(
                     reinterpret_cast<std::uint64_t>(map_c)),
                 "r"(col), "r"(row), "r"(group), "r"(buf)
                 : "memory");
  asm volatile("cp.async.bulk.commit_group;\n" ::: "memory");
}

// The tensor-copy epilogue of 64 rows x kCols columns of a consumer warpgroup's
// accumulators: n8 block j of row fr (of fr + 8) in d[kD + 4j], d[kD + 4j + 1] (d[kD + 4j +
// 2], d[kD + 4j + 3]), where fr = 16 * warp + lane / 4. The values go through slabs of 64
// rows x 128 bytes in this warpgroup's staging buffer (two slab buffers: the warps write
// slab s while slab s - 1 is still being read out, and go on to the next tile's MMAs while
// the last ones drain) and leave through the tensor copy engine to C's columns col0.., rows
// row0.. of group `group` (the engine clips rows past m and columns past n). A slab holds 32
// fp32 or 64 bf16 columns (bf16 rounded to nearest even, as the thread-store epilogue
// rounds); the buffers use the 128-byte swizzle of the tensor map, 16-byte piece c of row r
// at piece c ^ (r % 8), which leaves no bank conflicts. `bar`: this warpgroup's named barrier.
template <int kCols, int kD>
__device__ __forceinline__ void tma_epilogue(const float (&d)[128], const Params& p, const CUtensorMap* map_c,
                                             std::uint32_t stage_buf, int tid, int lane, int fr, int bar, int col0,
                                             int row0, int group) {
  static_assert(kD + kCols / 2 <= 128, "the columns' accumulators lie in d");
  if (p.c_fp32) {
#pragma unroll
    for (int slab = 0; slab < kCols / 32; ++slab) {
      const std::uint32_t buf = stage_buf + static_cast<std::uint32_t>(slab % 2) * kSlabBytes;
      slab_wait_free(tid, bar);
#pragma unroll
      for (int jj = 0; jj < 4; ++jj) {
        const int j = slab * 4 + jj;
        const int piece = jj * 2 + (lane % 4) / 2;
        const std::uint32_t within = static_cast<std::uint32_t>((lane % 2) * 8);
#pragma unroll
        for (int hr = 0; hr < 2; ++hr) {
          const int r = fr + 8 * hr;
          const std::uint32_t addr = buf + static_cast<std::uint32_t>(r * 128 + ((piece ^ (r % 8)) * 16)) + within;
          asm volatile("st.shared.v2.f32 [%0], {%1, %2};\n" ::"r"(addr), "f"(d[kD + 4 * j + 2 * hr]),
                       "f"(d[kD + 4 * j + 2 * hr + 1]));
        }
      }
      slab_issue(p, map_c, buf, tid, bar, col0 + slab * 32, row0, group);
    }
  } else {
#pragma unroll
    for (int slab = 0; slab < kCols / 64; ++slab) {
      const std::uint32_t buf = stage_buf + static_cast<std::uint32_t>(slab % 2) * kSlabBytes;
      slab_wait_free(tid, bar);
      write_bf16_slab<kD>(d, slab, buf, lane, fr);
      slab_issue(p, map_c, buf, tid, bar, col0 + slab * 64, row0, group);
    }
  }
}
#endif  // MOEHUB_GG_DEVICE

__global__ void __launch_bounds__(kThreads, 1)
    grouped_gemm_wgrad_kernel(const __grid_constant__ CUtensorMap map_a, const __grid_constant__ CUtensorMap map_b,
                              const __grid_constant__ CUtensorMap map_c, const __grid_constant__ Params p) {
#ifdef MOEHUB_GG_DEVICE
  extern __shared__ unsigned char smem_raw[];
  const std::uint32_t base = (smem_u32(smem_raw) + 1023u) & ~1023u;
  const std::uint32_t sa = base;                       // kStages x A tile
  const std::uint32_t sb = base + kStages * kABytes;   // kStages x B tile
  const std::uint32_t stg = sb + kStages * kBBytes;    // 2 x epilogue staging
  const std::uint32_t bars = stg + 2 * kStagingBytes;  // full[kStages], empty[kStages]
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
    // producer: one thread streams the A and B boxes of every K block of this block's tiles
    asm volatile("setmaxnreg.dec.sync.aligned.u32 40;\n");
    if (threadIdx.x == 0) {
      int s = 0;
      std::uint32_t phase = 0;
      for (int round = 0, t = tile_of(p, 0); t >= 0; ++round, t = tile_of(p, round)) {
        const int slot = t / p.tiles_per_group, local = t % p.tiles_per_group;
        const int m0 = (local % p.tiles_m) * kBM, n0 = (local / p.tiles_m) * kBN;
        const int r0 = p.row_start[slot], k_blocks = (p.rows[slot] + kBK - 1) / kBK;
        for (int kb = 0; kb < k_blocks; ++kb) {
          mbar_wait(empty(s), phase ^ 1u);
          mbar_expect_tx(full(s), kABytes + kBBytes);
          const int row = r0 + kb * kBK;
          const std::uint32_t a_dst = sa + static_cast<std::uint32_t>(s) * kABytes;
          const std::uint32_t b_dst = sb + static_cast<std::uint32_t>(s) * kBBytes;
          tma_2d(a_dst, &map_a, m0, row, full(s));
          tma_2d(a_dst + kBoxBytes, &map_a, m0 + 64, row, full(s));
#pragma unroll
          for (int j = 0; j < kBN / 64; ++j)
            tma_2d(b_dst + static_cast<std::uint32_t>(j) * kBoxBytes, &map_b, n0 + 64 * j, row, full(s));
          if (++s == kStages) {
            s = 0;
            phase ^= 1u;
          }
        }
      }
    }
    return;
  }

  // consumers: warpgroup 1 computes output rows 0..63 of the tile (A box 0), warpgroup 2
  // rows 64..127 (A box 1), both over all 256 columns
  asm volatile("setmaxnreg.inc.sync.aligned.u32 232;\n");
  const int cw = wg - 1;
  const int ctid = static_cast<int>(threadIdx.x) - 128;  // 0..255 over both consumers
  const int warp = (static_cast<int>(threadIdx.x) % 128) / 32;
  const int lane = static_cast<int>(threadIdx.x) % 32;
  const int tid = static_cast<int>(threadIdx.x) % 128;
  float d[128];
  int s = 0;
  std::uint32_t phase = 0;
  for (int round = 0, t = tile_of(p, 0); t >= 0; ++round, t = tile_of(p, round)) {
    const int slot = t / p.tiles_per_group, local = t % p.tiles_per_group;
    const int m0 = (local % p.tiles_m) * kBM, n0 = (local / p.tiles_m) * kBN;
    const int rows_g = p.rows[slot], k_blocks = (rows_g + kBK - 1) / kBK;
    if (k_blocks == 0) {
#pragma unroll
      for (int i = 0; i < 128; ++i) d[i] = 0.f;
    }
    int prev = -1;
    for (int kb = 0; kb < k_blocks; ++kb) {
      mbar_wait(full(s), phase);
      const std::uint32_t a_stage = sa + static_cast<std::uint32_t>(s) * kABytes;
      const std::uint32_t b_stage = sb + static_cast<std::uint32_t>(s) * kBBytes;
      const int valid = rows_g - kb * kBK;
      if (valid < kBK) {
        // the block runs past the group: zero rows valid..63 of all six boxes (a row of a
        // box is 128 bytes whatever the swizzle, which only permutes 16-byte pieces within
        // it), then make the stores visible to the tensor cores before either consumer's MMAs
        const int per_box = (kBK - valid) * 8;  // 16-byte pieces
        for (int i = ctid; i < 6 * per_box; i += 256) {
          const int box = i / per_box, rem = i % per_box;
          const std::uint32_t box_base = box < 2 ? a_stage + static_cast<std::uint32_t>(box) * kBoxBytes
                                                 : b_stage + static_cast<std::uint32_t>(box - 2) * kBoxBytes;
          st_shared_v4_zero(box_base + static_cast<std::uint32_t>((valid + rem / 8) * 128 + (rem % 8) * 16));
        }
        asm volatile("fence.proxy.async.shared::cta;\n" ::: "memory");
        asm volatile("bar.sync 3, 256;\n" ::: "memory");
      }
      const std::uint32_t a_addr = a_stage + static_cast<std::uint32_t>(cw) * kBoxBytes;
      asm volatile("wgmma.fence.sync.aligned;\n" ::: "memory");
      fence_acc(d);
#pragma unroll
      for (int kk = 0; kk < kBK / 16; ++kk) {
        const std::uint32_t koff = static_cast<std::uint32_t>(kk) * 16u * 128u;
        wgmma_tt(d, make_desc(a_addr + koff, kMnLbo, kMnSbo), make_desc(b_stage + koff, kMnLbo, kMnSbo),
                 (kb > 0 || kk > 0) ? 1 : 0);
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

    // epilogue, in eight 32-column slabs: fragments (row r, cols c, c+1 of n8 block j in
    // d[4j], d[4j+1]; row r+8 in d[4j+2], d[4j+3]) go to this warpgroup's staging buffer
    // as fp32, then each thread takes 4 consecutive values of a row, adds beta * C and
    // stores them, so that each row of the slab leaves as one 128-byte (fp32) or 64-byte
    // (bf16) run; rows past m and columns past n are masked
    const std::uint32_t stage_buf = stg + static_cast<std::uint32_t>(cw) * kStagingBytes;
    const int fr = warp * 16 + lane / 4;
    if (p.tma_store) {
      tma_epilogue<kBN, 0>(d, p, &map_c, stage_buf, tid, lane, fr, 1 + cw, n0, m0 + cw * 64, p.group[slot]);
      continue;
    }
    const long long c_group = static_cast<long long>(p.group[slot]) * p.m * p.n;
#pragma unroll
    for (int slab = 0; slab < kBN / kSlabCols; ++slab) {
#pragma unroll
      for (int jj = 0; jj < kSlabCols / 8; ++jj) {
        const int j = slab * (kSlabCols / 8) + jj;
        const std::uint32_t off = static_cast<std::uint32_t>(fr * kStagingRow + (jj * 8 + 2 * (lane % 4)) * 4);
        asm volatile("st.shared.v2.f32 [%0], {%1, %2};\n" ::"r"(stage_buf + off), "f"(d[4 * j]), "f"(d[4 * j + 1]));
        asm volatile("st.shared.v2.f32 [%0], {%1, %2};\n" ::"r"(stage_buf + off + 8u * kStagingRow), "f"(d[4 * j + 2]),
                     "f"(d[4 * j + 3]));
      }
      asm volatile("bar.sync %0, 128;\n" ::"r"(1 + cw) : "memory");
#pragma unroll
      for (int it = 0; it < 4; ++it) {
        const int piece = it * 128 + tid;  // 64 rows x 8 pieces of 4 values
        const int row = piece / 8, c4 = piece % 8;
        const int grow = m0 + cw * 64 + row;
        const int col = n0 + slab * kSlabCols + c4 * 4;
        store_c4(p, c_group, grow, col, stage_buf + static_cast<std::uint32_t>(row * kStagingRow + c4 * 16));
      }
      asm volatile("bar.sync %0, 128;\n" ::"r"(1 + cw) : "memory");
    }
  }
  // the tensor stores must be complete before the block (and its shared memory) ends
  if (p.tma_store && tid == 0) asm volatile("cp.async.bulk.wait_group 0;\n" ::: "memory");
#endif  // MOEHUB_GG_DEVICE
}

// Ping-pong schedule: each consumer warpgroup computes whole tiles of kWM x kWN (128
// accumulators a thread), the block's tiles alternating between the two, so that one
// warpgroup's epilogue overlaps the other's MMAs. The producer streams the K blocks of the
// block's tiles in order through one ring of kSt stages; a warpgroup steps over the other's
// K blocks (their stages and phases) without reading them, and two named barriers (3: the
// first warpgroup may start, 4: the second) make the main loops take turns.
template <int kWM, int kWN, int kSt>
struct Pingpong {
  static constexpr int kABoxes = kWM / 64, kBBoxes = kWN / 64;
  static constexpr int kStageBytes = (kABoxes + kBBoxes) * kBoxBytes;
  static constexpr int kSmem = kSt * kStageBytes + 2 * kStagingBytes + 2 * kSt * 8 + 1024;
  static_assert(kWM * kWN == 64 * 256,
                "a warpgroup's tile is 128 accumulators a thread");
  static_assert(kSmem <= 227 * 1024, "shared memory of one block");
};

template <int kWM, int kWN, int kSt>
__global__ void __launch_bounds__(kThreads, 1)
    grouped_gemm_wgrad_pingpong_kernel(const __grid_constant__ CUtensorMap map_a, const __grid_constant__ CUtensorMap map_b,
                                       const __grid_constant__ CUtensorMap map_c, const __grid_constant__ Params p) {
#ifdef MOEHUB_GG_DEVICE
  using PP = Pingpong<kWM, kWN, kSt>;
  extern __shared__ unsigned char smem_raw[];
  const std::uint32_t base = (smem_u32(smem_raw) + 1023u) & ~1023u;
  const std::uint32_t sring = base;                        // kSt x (A boxes, B boxes)
  const std::uint32_t stg = sring + kSt * PP::kStageBytes;  // 2 x epilogue staging
  const std::uint32_t bars = stg + 2 * kStagingBytes;       // full[kSt], empty[kSt]
  auto full = [&](int s) { return bars + 8u * static_cast<std::uint32_t>(s); };
  auto empty = [&](int s) { return bars + 8u * static_cast<std::uint32_t>(kSt + s); };
  const int wg = static_cast<int>(threadIdx.x) / 128;
  if (threadIdx.x == 0) {
    for (int s = 0; s < kSt; ++s) {
      mbar_init(full(s), 1);
      mbar_init(empty(s), 4);  // one arrival per warp of the consuming warpgroup
    }
    asm volatile("fence.mbarrier_init.release.cluster;\n" ::: "memory");
  }
  __syncthreads();

  if (wg == 0) {
    asm volatile("setmaxnreg.dec.sync.aligned.u32 40;\n");
    if (threadIdx.x == 0) {
      int s = 0;
      std::uint32_t phase = 0;
      for (int round = 0, t = tile_of(p, 0); t >= 0; ++round, t = tile_of(p, round)) {
        const int slot = t / p.tiles_per_group, local = t % p.tiles_per_group;
        const int m0 = (local % p.tiles_m) * kWM, n0 = (local / p.tiles_m) * kWN;
        const int r0 = p.row_start[slot], k_blocks = (p.rows[slot] + kBK - 1) / kBK;
        for (int kb = 0; kb < k_blocks; ++kb) {
          mbar_wait(empty(s), phase ^ 1u);
          mbar_expect_tx(full(s), PP::kStageBytes);
          const int row = r0 + kb * kBK;
          const std::uint32_t dst = sring + static_cast<std::uint32_t>(s) * PP::kStageBytes;
#pragma unroll
          for (int j = 0; j < PP::kABoxes; ++j)
            tma_2d(dst + static_cast<std::uint32_t>(j) * kBoxBytes, &map_a, m0 + 64 * j, row, full(s));
#pragma unroll
          for (int j = 0; j < PP::kBBoxes; ++j)
            tma_2d(dst + static_cast<std::uint32_t>(PP::kABoxes + j) * kBoxBytes, &map_b, n0 + 64 * j, row, full(s));
          if (++s == kSt) {
            s = 0;
            phase ^= 1u;
          }
        }
      }
    }
    return;
  }

  asm volatile("setmaxnreg.inc.sync.aligned.u32 232;\n");
  const int cw = wg - 1;
  const int warp = (static_cast<int>(threadIdx.x) % 128) / 32;
  const int lane = static_cast<int>(threadIdx.x) % 32;
  const int tid = static_cast<int>(threadIdx.x) % 128;
  const int fr = warp * 16 + lane / 4;
  const std::uint32_t stage_buf = stg + static_cast<std::uint32_t>(cw) * kStagingBytes;
  float d[128];
  int s = 0;
  std::uint32_t phase = 0;
  int i = 0;
  for (int t = tile_of(p, 0); t >= 0; ++i, t = tile_of(p, i)) {
    const int slot = t / p.tiles_per_group, local = t % p.tiles_per_group;
    const int rows_g = p.rows[slot], k_blocks = (rows_g + kBK - 1) / kBK;
    if (i % 2 != cw) {
      // the other warpgroup's tile: step over its K blocks in the ring
      const int ahead = s + k_blocks;
      phase ^= static_cast<std::uint32_t>((ahead / kSt) & 1);
      s = ahead % kSt;
      continue;
    }
    const int m0 = (local % p.tiles_m) * kWM, n0 = (local / p.tiles_m) * kWN;
    // the main loops take turns: this one starts once the other warpgroup has waited for
    // every K block of the block's previous tile, so that the ring's stages are at most one
    // lap ahead of the phases this warpgroup waits for (two laps would pass a parity wait
    // on a stale fill)
    if (i > 0) asm volatile("bar.sync %0, 256;\n" ::"r"(3 + cw) : "memory");
    if (k_blocks == 0) {
#pragma unroll
      for (int q = 0; q < 128; ++q) d[q] = 0.f;
    }
    int prev = -1;
    for (int kb = 0; kb < k_blocks; ++kb) {
      mbar_wait(full(s), phase);
      const std::uint32_t stage = sring + static_cast<std::uint32_t>(s) * PP::kStageBytes;
      const int valid = rows_g - kb * kBK;
      if (valid < kBK) {
        // rows valid..63 of every box belong to the next group (or lie past the end): zero them
        const int per_box = (kBK - valid) * 8;  // 16-byte pieces
        for (int q = tid; q < (PP::kABoxes + PP::kBBoxes) * per_box; q += 128) {
          const int box = q / per_box, rem = q % per_box;
          st_shared_v4_zero(stage + static_cast<std::uint32_t>(box * kBoxBytes + (valid + rem / 8) * 128 + (rem % 8) * 16));
        }
        asm volatile("fence.proxy.async.shared::cta;\n" ::: "memory");
        asm volatile("bar.sync %0, 128;\n" ::"r"(1 + cw) : "memory");
      }
      const std::uint32_t b_stage = stage + static_cast<std::uint32_t>(PP::kABoxes) * kBoxBytes;
      asm volatile("wgmma.fence.sync.aligned;\n" ::: "memory");
      fence_acc(d);
#pragma unroll
      for (int kk = 0; kk < kBK / 16; ++kk) {
        const std::uint32_t koff = static_cast<std::uint32_t>(kk) * 16u * 128u;
        const int acc = (kb > 0 || kk > 0) ? 1 : 0;
        const std::uint64_t db = make_desc(b_stage + koff, kMnLbo, kMnSbo);
        if constexpr (kWN == 256) {
          wgmma_tt(d, make_desc(stage + koff, kMnLbo, kMnSbo), db, acc);
        } else {
          wgmma_tt_n128<0>(d, make_desc(stage + koff, kMnLbo, kMnSbo), db, acc);
          wgmma_tt_n128<1>(d, make_desc(stage + kBoxBytes + koff, kMnLbo, kMnSbo), db, acc);
        }
      }
      asm volatile("wgmma.commit_group.sync.aligned;\n" ::: "memory");
      fence_acc(d);
      asm volatile("wgmma.wait_group.sync.aligned 1;\n" ::: "memory");
      fence_acc(d);
      if (prev >= 0 && lane == 0) mbar_arrive(empty(prev));
      prev = s;
      if (++s == kSt) {
        s = 0;
        phase ^= 1u;
      }
    }
    // the block's next tile (the other warpgroup's) may start its main loop
    if (tile_of(p, i + 1) >= 0) asm volatile("bar.arrive %0, 256;\n" ::"r"(4 - cw) : "memory");
    asm volatile("wgmma.wait_group.sync.aligned 0;\n" ::: "memory");
    fence_acc(d);
    if (prev >= 0 && lane == 0) mbar_arrive(empty(prev));

    // epilogue per 64-row half h of the tile (accumulators d[h * kWN / 2 ..]): as in the
    // cooperative kernel, fragments of n8 block j in d[.. + 4j .. 4j + 3]
#pragma unroll
    for (int h = 0; h < kWM / 64; ++h) {
      const int dh = h * (kWN / 2);
      if (p.tma_store) {
        if (h == 0) {
          tma_epilogue<kWN, 0>(d, p, &map_c, stage_buf, tid, lane, fr, 1 + cw, n0, m0, p.group[slot]);
        } else if constexpr (kWM / 64 > 1) {
          tma_epilogue<kWN, kWN / 2>(d, p, &map_c, stage_buf, tid, lane, fr, 1 + cw, n0, m0 + 64, p.group[slot]);
        }
        continue;
      }
      const long long c_group = static_cast<long long>(p.group[slot]) * p.m * p.n;
#pragma unroll
      for (int slab = 0; slab < kWN / kSlabCols; ++slab) {
#pragma unroll
        for (int jj = 0; jj < kSlabCols / 8; ++jj) {
          const int j = slab * (kSlabCols / 8) + jj;
          const std::uint32_t off = static_cast<std::uint32_t>(fr * kStagingRow + (jj * 8 + 2 * (lane % 4)) * 4);
          asm volatile("st.shared.v2.f32 [%0], {%1, %2};\n" ::"r"(stage_buf + off), "f"(d[dh + 4 * j]), "f"(d[dh + 4 * j + 1]));
          asm volatile("st.shared.v2.f32 [%0], {%1, %2};\n" ::"r"(stage_buf + off + 8u * kStagingRow),
                       "f"(d[dh + 4 * j + 2]), "f"(d[dh + 4 * j + 3]));
        }
        asm volatile("bar.sync %0, 128;\n" ::"r"(1 + cw) : "memory");
#pragma unroll
        for (int it = 0; it < 4; ++it) {
          const int piece = it * 128 + tid;  // 64 rows x 8 pieces of 4 values
          const int row = piece / 8, c4 = piece % 8;
          store_c4(p, c_group, m0 + h * 64 + row, n0 + slab * kSlabCols + c4 * 4,
                   stage_buf + static_cast<std::uint32_t>(row * kStagingRow + c4 * 16));
        }
        asm volatile("bar.sync %0, 128;\n" ::"r"(1 + cw) : "memory");
      }
    }
  }
  if (p.tma_store && tid == 0) asm volatile("cp.async.bulk.wait_group 0;\n" ::: "memory");
#endif  // MOEHUB_GG_DEVICE
}

enum class Schedule { kCooperative, kPingpong128x128, kPingpong64x256 };

// Mean rows per non-empty group below which a call runs the ping-pong schedule: there a
// tile's fp32 epilogue (128 KiB) is long beside its main loop, and overlapping it with the
// other warpgroup's MMAs gained 2-6 % on the Qwen shapes (about 1,024 rows per expert),
// while on Mixtral's down projection (4,096 rows, m = 14,336) the ping-pong tiles (128 x 128)
// lost 28 % against the cooperative 128 x 256 ones (our measurement, docs/results/gpu-h200.md
// run W5).
constexpr long long kPingpongMaxMeanRows = 2048;

// bf16 C with beta 0 on an H100-class memory system (peak DRAM bandwidth below
// kH100ClassMaxDramGbps): where C has at least kWideCMinM rows (m: the hidden size of a
// gate+up weight gradient) the cooperative 128 x 256 tiles in snake order beat ping-pong on
// short reductions. On an H100 (3.35 TB/s) Qwen3-30B-A3B's gate+up ran 8-19 % faster than on
// ping-pong in three calls, Qwen1.5-MoE's 6-11 % on skewed routing and -2 to +11 % on even
// routing, while the down projections (m 768 and 1,408) were 0-6 % slower and stay on
// ping-pong (our measurement, docs/results/gpu-h200.md run W26). On that card ping-pong wrote
// bf16 C more slowly than fp32 C on Qwen3's gate+up (580-609 against 642-648 TFLOP/s), which
// the H200 did not (run W24: 752 against 704). On the H100 ping-pong's long experts read
// operands back from DRAM (1.66x the cooperative schedule's bytes, the same time with bf16
// as with fp32 C); on the H200 they do not, and ping-pong ran the Qwen gate+up gradients
// 1-4.5 % faster than the cooperative tiles in seven readings of eight (run W27). So the
// H200 keeps the rule above; the bandwidth gate separates the two cards measured.
constexpr long long kWideCMinM = 2048;
constexpr double kH100ClassMaxDramGbps = 4000;

// fp32 C with beta 0, at least kWideCMinM rows of C, on an H100-class memory system: when
// some groups have at least kSplitMinRows rows and some fewer, the long ones run as a call
// of their own on the cooperative tiles, before the others, which take the rules above. So
// ping-pong keeps the short experts' epilogues under the MMAs while the long experts run on
// the tiles that read fewer operand bytes per FLOP. On an H100, with skewed routing (16,384
// and 32,768 tokens), the split gate+up gradients of Qwen3-30B-A3B and Qwen1.5-MoE ran
// up to 23 % faster than one call on the schedule of the mean (1-23 % in every reading but
// two, Qwen1.5 at 16,384 tokens in one call: 0.5-1.2 % slower); against one cooperative
// call in snake order, 1.9-8.3 % faster at 16,384 tokens in twenty-one readings of
// twenty-two (2.1 % slower in the last) and -4.5 to +1.9 % at 32,768. Split points of
// 1,280 to 1,792 rows read alike (their differences were within the 4 % by which two
// identical calls differed in one process); 2,048 gained less at 16,384 tokens. When every group is long,
// one cooperative call lost 4 % to ping-pong on even Qwen1.5 at 1,638 rows, so such a call
// keeps the rules above; the down projections (m 768 and 1,408) ran up to 6 % slower split,
// and with bf16 C the split gained nothing over the bf16 rule, so those keep one call (our
// measurements, docs/results/gpu-h200.md run W28).
constexpr long long kSplitMinRows = 1536;

// Whether the non-empty groups' mean reduction length, over the walking order's slots
// [first, last) of p, is below kPingpongMaxMeanRows.
bool short_reductions(const Params& p, int first, int last) {
  long long rows = 0, groups = 0;
  for (int s = first; s < last; ++s) {
    rows += p.rows[s];
    groups += p.rows[s] > 0 ? 1 : 0;
  }
  return groups > 0 && rows < kPingpongMaxMeanRows * groups;
}

// Whether a card's peak DRAM bandwidth (dram_gbps, 0 when unknown) is known and below
// kH100ClassMaxDramGbps.
bool h100_class_memory(double dram_gbps) { return dram_gbps > 0 && dram_gbps < kH100ClassMaxDramGbps; }

// Whether a call writes C with beta 0, has at least kWideCMinM rows of C and runs on an
// H100-class memory system: where the bf16 rule and the fp32 split apply.
bool wide_c_on_h100_class(const GroupedGemmWgradArgs& a, double dram_gbps) {
  return a.beta == 0.f && a.m >= kWideCMinM && h100_class_memory(dram_gbps);
}

// Whether a call takes the cooperative schedule by the bf16 rule (kWideCMinM).
bool cooperative_bf16(const GroupedGemmWgradArgs& a, double dram_gbps) {
  return !a.c_fp32 && wide_c_on_h100_class(a, dram_gbps);
}

// The rows from which a group runs in the first of two calls, on the cooperative tiles
// (kSplitMinRows); 0: one call, as is a split point that no group or every group reaches.
// MOEHUB_WGRAD_SPLIT_ROWS=N (read at every call, for comparisons) sets it: 0 for one call,
// N > 0 to split at N rows on any call. A value that is not a non-negative integer is an
// error (-1).
long long wgrad_split_rows(const GroupedGemmWgradArgs& a, double dram_gbps) {
  const std::string v = env_knob("MOEHUB_WGRAD_SPLIT_ROWS");
  if (v.empty()) return a.c_fp32 && wide_c_on_h100_class(a, dram_gbps) ? kSplitMinRows : 0;
  char* end = nullptr;
  errno = 0;
  const long long n = std::strtoll(v.c_str(), &end, 10);
  if (errno != 0 || end == v.c_str() || *end != '\0' || n < 0) return -1;
  return n;
}

// The kernel for a call: MOEHUB_WGRAD_SCHEDULE (cooperative, pingpong, pingpong-64x256)
// when set, for comparisons; else the cooperative tiles for the long groups of a split call
// (long_part), and otherwise by the mean reduction length and the bf16 rule (above). Read at
// every call, so that one process can time the schedules side by side
// (scripts/gpu/torch_grouped_mm.py --wgrad-variants). short_k: short_reductions of the
// call's groups.
Schedule wgrad_schedule(const GroupedGemmWgradArgs& a, double dram_gbps, bool short_k, bool long_part) {
  const std::string forced = env_knob("MOEHUB_WGRAD_SCHEDULE");
  if (forced == "cooperative") return Schedule::kCooperative;
  if (forced == "pingpong") return Schedule::kPingpong128x128;
  if (forced == "pingpong-64x256") return Schedule::kPingpong64x256;
  if (short_k && !long_part && !cooperative_bf16(a, dram_gbps)) return Schedule::kPingpong128x128;
  return Schedule::kCooperative;
}

// Whether bf16 C with beta 0 leaves through the tensor copy engine (tma_epilogue) or
// through the thread stores: MOEHUB_WGRAD_BF16_EPILOGUE=tma or threads when set (read at
// every call, for comparisons); else the tensor copy engine. bf16 C with beta 1 always takes
// the thread stores, which add C in fp32 and round once (the engine's add would round the
// accumulators to bf16 first, then the sum).
bool wgrad_bf16_tma(const GroupedGemmWgradArgs& a) {
  if (a.c_fp32 || a.beta != 0.f) return false;
  return env_knob("MOEHUB_WGRAD_BF16_EPILOGUE") != "threads";
}

// Whether the blocks walk the tiles in snake order (tile_of): MOEHUB_WGRAD_ORDER=snake or
// stride when set (read at every call, for comparisons); else snake for the ping-pong
// schedules, where it gained 2.5-7 % on skewed Qwen3 and 0-3.3 % on skewed Qwen1.5 (within
// 1.3 % either way on the even shapes), and stride for the cooperative one on long
// reductions, where snake read 3-9 % lower on Mixtral (our measurements, docs/results/gpu-h200.md
// run W6). The cooperative schedule on short reductions (bf16 C, above) takes snake: 4-6 %
// faster than stride on skewed Qwen3's gate+up, within 2 % either way on the other Qwen
// shapes (run W26).
bool wgrad_snake_order(Schedule sched, bool short_k) {
  const std::string forced = env_knob("MOEHUB_WGRAD_ORDER");
  if (forced == "snake") return true;
  if (forced == "stride") return false;
  return sched != Schedule::kCooperative || short_k;
}

}  // namespace

std::string grouped_gemm_wgrad_unsupported(const GroupedGemmWgradArgs& a) {
  if (a.rows.empty()) return "no groups";
  if (a.rows.size() > static_cast<std::size_t>(kGroupedGemmMaxGroups))
    return "more than " + std::to_string(kGroupedGemmMaxGroups) + " groups";
  if (a.m <= 0 || a.n <= 0) return "m and n must be positive";
  if (a.m % 8 != 0 || a.n % 8 != 0) return "m and n must be multiples of 8 (16-byte rows for the tensor copies)";
  if (!aligned16(a.a) || !aligned16(a.b) || !aligned16(a.c)) return "A, B and C must be 16-byte aligned";
  long long rows = 0;
  for (std::int64_t k : a.rows) {
    if (k < 0) return "negative row count";
    rows += k;
  }
  const long long tiles_per_group = (a.m + kBM - 1) / kBM * ((a.n + kBN - 1) / kBN);
  if (rows + kBK > INT_MAX || a.m > INT_MAX / 2 || a.n > INT_MAX / 2 ||
      tiles_per_group * static_cast<long long>(a.rows.size()) > INT_MAX)
    return "sizes past 32-bit tile coordinates";
  const DeviceInfo& dev = device_info();
  if (dev.major != 9 || dev.minor != 0)
    return "needs an sm_90 GPU (" +
           (dev.major == 0 ? std::string("no CUDA device") : "this one is sm_" + std::to_string(dev.major) + std::to_string(dev.minor)) +
           ")";
  if (!encode_fn()) return "the driver has no cuTensorMapEncodeTiled";
  return {};
}

double grouped_gemm_wgrad_waves(const GroupedGemmWgradArgs& a) {
  const DeviceInfo& dev = device_info();
  if (dev.sms <= 0 || a.m <= 0 || a.n <= 0) return 0.0;
  long long groups = 0;
  for (std::int64_t k : a.rows) groups += (k > 0 || a.beta == 0.f) ? 1 : 0;
  const long long tiles = groups * ((a.m + kBM - 1) / kBM) * ((a.n + kBN - 1) / kBN);
  return static_cast<double>(tiles) / dev.sms;
}

namespace {

// Fills p's slots: the groups in walking order, longest reduction first, so that a grid's
// last tiles are the short ones; an empty group has tiles only when its C must be cleared
// (beta = 0). Returns the rows of all groups.
int fill_slots(const GroupedGemmWgradArgs& a, Params& p) {
  const int groups = static_cast<int>(a.rows.size());
  std::vector<int> start(static_cast<std::size_t>(groups));
  int rows = 0;
  for (int g = 0; g < groups; ++g) {
    start[static_cast<std::size_t>(g)] = rows;
    rows += static_cast<int>(a.rows[static_cast<std::size_t>(g)]);
  }
  std::vector<int> order(static_cast<std::size_t>(groups));
  std::iota(order.begin(), order.end(), 0);
  std::stable_sort(order.begin(), order.end(), [&](int x, int y) {
    return a.rows[static_cast<std::size_t>(x)] > a.rows[static_cast<std::size_t>(y)];
  });
  p.slots = 0;
  for (int g : order) {
    const auto k = a.rows[static_cast<std::size_t>(g)];
    if (k == 0 && a.beta != 0.f) continue;
    p.group[p.slots] = g;
    p.row_start[p.slots] = start[static_cast<std::size_t>(g)];
    p.rows[p.slots] = static_cast<int>(k);
    ++p.slots;
  }
  return rows;
}

// One grid of a call: the walking order's slots [first, last), its schedule and tile order.
struct Grid {
  int first, last;
  Schedule sched;
  bool snake;
};

// The grids of a call (p's slots filled): the slots of at least split_rows rows (first in
// the walking order) on the cooperative tiles, then the others; one grid of every slot
// without a split, or when the split point takes none or all of them.
std::vector<Grid> plan_grids(const GroupedGemmWgradArgs& a, double dram_gbps, const Params& p, long long split_rows) {
  int cut = 0;
  if (split_rows > 0)
    while (cut < p.slots && p.rows[cut] >= split_rows) ++cut;
  if (cut == p.slots) cut = 0;  // every group long: no split
  std::vector<Grid> grids;
  const auto add = [&](int first, int last, bool long_part) {
    const bool short_k = short_reductions(p, first, last);
    const Schedule sched = wgrad_schedule(a, dram_gbps, short_k, long_part);
    grids.push_back(Grid{first, last, sched, wgrad_snake_order(sched, short_k)});
  };
  if (cut > 0) add(0, cut, true);
  if (cut < p.slots) add(cut, p.slots, false);
  return grids;
}

}  // namespace

WgradPlan grouped_gemm_wgrad_plan(const GroupedGemmWgradArgs& a, double dram_gbps) {
  WgradPlan plan;
  if (a.rows.size() > static_cast<std::size_t>(kGroupedGemmMaxGroups)) {
    plan.error = "more than " + std::to_string(kGroupedGemmMaxGroups) + " groups";
    return plan;
  }
  const long long split_rows = wgrad_split_rows(a, dram_gbps);
  if (split_rows < 0) {
    plan.error = "MOEHUB_WGRAD_SPLIT_ROWS must be a non-negative integer";
    return plan;
  }
  Params p{};
  fill_slots(a, p);
  for (const Grid& g : plan_grids(a, dram_gbps, p, split_rows)) {
    WgradPlan::Grid out;
    out.schedule = g.sched == Schedule::kCooperative       ? "cooperative"
                   : g.sched == Schedule::kPingpong128x128 ? "pingpong"
                                                           : "pingpong-64x256";
    out.snake = g.snake;
    out.groups.assign(p.group + g.first, p.group + g.last);
    plan.grids.push_back(std::move(out));
  }
  return plan;
}

namespace {

// Launches the ping-pong kernel with BM x BN tiles and S stages on grid blocks; smem_bit:
// its bit in DeviceInfo::smem_set_wgrad (shared memory size set once per process).
template <int BM, int BN, int S>
cudaError_t launch_pingpong(unsigned smem_bit, int grid, const CUtensorMap& map_a, const CUtensorMap& map_b,
                            const CUtensorMap& map_c, const Params& p, cudaStream_t stream) {
  DeviceInfo& dev = device_info();
  using PP = Pingpong<BM, BN, S>;
  if (!(dev.smem_set_wgrad & smem_bit)) {
    const cudaError_t e = cudaFuncSetAttribute(grouped_gemm_wgrad_pingpong_kernel<BM, BN, S>,
                                               cudaFuncAttributeMaxDynamicSharedMemorySize, PP::kSmem);
    if (e != cudaSuccess) return e;
    dev.smem_set_wgrad |= smem_bit;
  }
  grouped_gemm_wgrad_pingpong_kernel<BM, BN, S><<<grid, kThreads, PP::kSmem, stream>>>(map_a, map_b, map_c, p);
  return cudaGetLastError();
}

// Launches the walking order's slots [first, last) of p (groups, rows, C and the tensor
// maps filled in) as one grid of sched, in snake or strided order.
cudaError_t launch_wgrad(Params p, int first, int last, Schedule sched, bool snake, const CUtensorMap& map_a,
                         const CUtensorMap& map_b, const CUtensorMap& map_c, cudaStream_t stream) {
  DeviceInfo& dev = device_info();
  if (first != 0) {
    std::copy(p.group + first, p.group + last, p.group);
    std::copy(p.row_start + first, p.row_start + last, p.row_start);
    std::copy(p.rows + first, p.rows + last, p.rows);
  }
  p.slots = last - first;
  const int tile_m = sched == Schedule::kPingpong64x256 ? 64 : kBM;
  const int tile_n = sched == Schedule::kPingpong128x128 ? 128 : kBN;
  p.tiles_m = (p.m + tile_m - 1) / tile_m;
  p.tiles_per_group = p.tiles_m * ((p.n + tile_n - 1) / tile_n);
  p.tiles_total = p.slots * p.tiles_per_group;
  p.snake = snake ? 1 : 0;
  if (p.tiles_total == 0) return cudaSuccess;
  if (sched == Schedule::kCooperative) {
    const int grid = p.tiles_total < dev.sms ? p.tiles_total : dev.sms;
    if (!(dev.smem_set_wgrad & 1u)) {
      const cudaError_t e =
          cudaFuncSetAttribute(grouped_gemm_wgrad_kernel, cudaFuncAttributeMaxDynamicSharedMemorySize, kSmemBytes);
      if (e != cudaSuccess) return e;
      dev.smem_set_wgrad |= 1u;
    }
    grouped_gemm_wgrad_kernel<<<grid, kThreads, kSmemBytes, stream>>>(map_a, map_b, map_c, p);
    return cudaGetLastError();
  }
  // two tiles per block at a time, one per consumer warpgroup
  const int grid = (p.tiles_total + 1) / 2 < dev.sms ? (p.tiles_total + 1) / 2 : dev.sms;
  return sched == Schedule::kPingpong128x128 ? launch_pingpong<128, 128, 6>(2u, grid, map_a, map_b, map_c, p, stream)
                                             : launch_pingpong<64, 256, 4>(4u, grid, map_a, map_b, map_c, p, stream);
}

}  // namespace

cudaError_t grouped_gemm_wgrad(const GroupedGemmWgradArgs& a, cudaStream_t stream) {
  if (!grouped_gemm_wgrad_unsupported(a).empty()) return cudaErrorNotSupported;
  const double dram = device_info().dram_gbps;
  const long long split_rows = wgrad_split_rows(a, dram);
  if (split_rows < 0) return cudaErrorInvalidValue;
  Params p{};
  p.m = static_cast<int>(a.m);
  p.n = static_cast<int>(a.n);
  p.c_fp32 = a.c_fp32 ? 1 : 0;
  p.beta = a.beta;
  p.c = a.c;
  const int rows = fill_slots(a, p);
  if (p.slots == 0) return cudaSuccess;

  auto encode = encode_fn();
  CUtensorMap map_a{}, map_b{};
  const cuuint64_t all_rows = static_cast<cuuint64_t>(rows > 0 ? rows : 1);  // no K block reads it when 0
  const cuuint32_t box[2] = {64, kBK};
  const cuuint32_t estride[2] = {1, 1};
  for (int which = 0; which < 2; ++which) {
    // A: [rows][m], B: [rows][n]; boxes of 64 columns x 64 rows; rows past the end read as zeros
    const cuuint64_t cols = static_cast<cuuint64_t>(which == 0 ? a.m : a.n);
    const cuuint64_t dim[2] = {cols, all_rows};
    const cuuint64_t stride[1] = {cols * 2};
    if (encode(which == 0 ? &map_a : &map_b, CU_TENSOR_MAP_DATA_TYPE_BFLOAT16, 2, const_cast<void*>(which == 0 ? a.a : a.b),
               dim, stride, box, estride, CU_TENSOR_MAP_INTERLEAVE_NONE, CU_TENSOR_MAP_SWIZZLE_128B,
               CU_TENSOR_MAP_L2_PROMOTION_L2_256B, CU_TENSOR_MAP_FLOAT_OOB_FILL_NONE) != CUDA_SUCCESS)
      return cudaErrorInvalidValue;
  }
  CUtensorMap map_c{};
  p.tma_store = (a.c_fp32 && (a.beta == 0.f || a.beta == 1.f)) || wgrad_bf16_tma(a) ? 1 : 0;
  if (p.tma_store) {
    // C: groups of [m][n] fp32 or bf16; box of one slab, 32 fp32 or 64 bf16 (n) x 64 (m) x 1
    // (128-byte rows), 128-byte swizzle; the engine clips rows past m and columns past n
    const cuuint64_t esize = a.c_fp32 ? 4 : 2;
    const cuuint64_t dim[3] = {static_cast<cuuint64_t>(a.n), static_cast<cuuint64_t>(a.m),
                               static_cast<cuuint64_t>(a.rows.size())};
    const cuuint64_t stride[2] = {static_cast<cuuint64_t>(a.n) * esize, static_cast<cuuint64_t>(a.m * a.n) * esize};
    const cuuint32_t box_c[3] = {static_cast<cuuint32_t>(128 / esize), 64, 1};
    const cuuint32_t estride_c[3] = {1, 1, 1};
    if (encode(&map_c, a.c_fp32 ? CU_TENSOR_MAP_DATA_TYPE_FLOAT32 : CU_TENSOR_MAP_DATA_TYPE_BFLOAT16, 3, a.c, dim,
               stride, box_c, estride_c,
               CU_TENSOR_MAP_INTERLEAVE_NONE, CU_TENSOR_MAP_SWIZZLE_128B, CU_TENSOR_MAP_L2_PROMOTION_NONE,
               CU_TENSOR_MAP_FLOAT_OOB_FILL_NONE) != CUDA_SUCCESS)
      return cudaErrorInvalidValue;
  }
  for (const Grid& g : plan_grids(a, dram, p, split_rows)) {
    const cudaError_t e = launch_wgrad(p, g.first, g.last, g.sched, g.snake, map_a, map_b, map_c, stream);
    if (e != cudaSuccess) return e;
  }
  return cudaSuccess;
}

}  // namespace moehub::kernels
