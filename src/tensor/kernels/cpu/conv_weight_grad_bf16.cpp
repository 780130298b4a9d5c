#include "tensor/kernels/cpu/conv_weight_grad_bf16.h"

#include <omp.h>

#include <algorithm>
#include <atomic>
#include <cstddef>
#include <cstring>
#include <dnnl.hpp>

#include "core/error.h"
#include "tensor/kernels/cpu/compute_precision.h"
#include "tensor/kernels/cpu/dnnl_util.h"

#if defined(__AVX512BF16__) && defined(__AVX512BW__)
// GCC 12 reports its own _mm512_undefined_* helpers as maybe-uninitialized when inlined.
#if !defined(__clang__)
#pragma GCC diagnostic ignored "-Wmaybe-uninitialized"
#endif
#include <immintrin.h>
#define DTRAIN_BF16_WEIGHT_GRAD 1
#endif

namespace dtrain::cpu {

namespace {
std::atomic<bool> g_kernel_on{true};
}  // namespace

void set_bf16_weight_grad_kernel(bool on) { g_kernel_on.store(on, std::memory_order_relaxed); }
bool bf16_weight_grad_kernel_on() { return g_kernel_on.load(std::memory_order_relaxed); }

#if defined(DTRAIN_BF16_WEIGHT_GRAD)
namespace {

constexpr std::int64_t kBlock = 16;              // channels per nChw16c block: one vector of f32 lanes
constexpr std::int64_t kVector = 64;             // bytes in a vector
constexpr int kAccumulators = 24;                // of the 32 vector registers: the rest hold dy's pairs
constexpr std::int64_t kChunkBytes = 256 << 10;  // the pairs of a chunk of images, kept in L2
constexpr std::int64_t kMaxChunk = 8;

// The padded extents of one image's pairs. Column p of the pair index covers outputs 2p and 2p+1.
struct Extents {
  std::int64_t pairs;  // (OW + 1) / 2 output pairs per row
  std::int64_t rows;   // padded input rows read: (OH - 1) * sh + KH
  std::int64_t cols;   // padded input columns read: (2 pairs - 2) * sw + KW
  std::int64_t in_blocks, out_blocks;
  std::int64_t x_vectors;   // x's pairs per image: in_blocks * rows * cols, a vector each
  std::int64_t dy_vectors;  // dy's pairs per image: out_blocks * OH * pairs

  Extents(const ConvDims& d, const Conv2dGeometry& g)
      : pairs((d.OW + 1) / 2),
        rows((d.OH - 1) * g.stride_h + d.KH),
        cols((2 * pairs - 2) * g.stride_w + d.KW),
        in_blocks(d.C / kBlock),
        out_blocks(d.O / kBlock),
        x_vectors(in_blocks * rows * cols),
        dy_vectors(out_blocks * d.OH * pairs) {}
};

// The 16 bf16 in the low half of a and the 16 in the low half of b as 16 pairs (a[i], b[i]).
inline __m512i interleave(__m512i a, __m512i b) {
  const __m512i order = _mm512_set_epi16(47, 15, 46, 14, 45, 13, 44, 12, 43, 11, 42, 10, 41, 9, 40, 8, 39, 7, 38, 6, 37,
                                         5, 36, 4, 35, 3, 34, 2, 33, 1, 32, 0);
  return _mm512_permutex2var_epi16(a, order, b);
}
// The 16 bf16 of the low half and the 16 of the high half as 16 pairs: two neighbouring columns
// of an nChw16c row read as one vector.
inline __m512i interleave_halves(__m512i ab) {
  const __m512i order = _mm512_set_epi16(31, 15, 30, 14, 29, 13, 28, 12, 27, 11, 26, 10, 25, 9, 24, 8, 23, 7, 22, 6, 21,
                                         5, 20, 4, 19, 3, 18, 2, 17, 1, 16, 0);
  return _mm512_permutexvar_epi16(order, ab);
}

// One column of an nChw16c row (16 channels) in the low half of a vector.
inline __m512i load16(const std::uint16_t* p) {
  return _mm512_castsi256_si512(_mm256_loadu_si256(reinterpret_cast<const __m256i*>(p)));
}
inline __m512i load32(const std::uint16_t* p) { return _mm512_loadu_si512(p); }

// One image's x pairs: out[cb][r][col] holds (x[c][ih][iw], x[c][ih][iw + sw]) for the 16 channels c
// of block cb, ih = r - ph, iw = col - pw; zero outside the image.
void build_x_pairs(const ConvDims& d, const Conv2dGeometry& g, const Extents& e, const std::uint16_t* x, __m512i* out) {
  const __m512i zero = _mm512_setzero_si512();
  const std::int64_t sw = g.stride_w;
  const std::int64_t inner_lo = std::min(e.cols, g.pad_w);
  const std::int64_t inner_hi = std::max(inner_lo, std::min(e.cols, d.W - sw + g.pad_w));
  for (std::int64_t cb = 0; cb < e.in_blocks; ++cb) {
    for (std::int64_t r = 0; r < e.rows; ++r, out += e.cols) {
      const std::int64_t ih = r - g.pad_h;
      if (ih < 0 || ih >= d.H) {
        for (std::int64_t col = 0; col < e.cols; ++col) _mm512_store_si512(out + col, _mm512_setzero_si512());
        continue;
      }
      const std::uint16_t* row = x + (cb * d.H + ih) * d.W * kBlock;
      const auto column = [&](std::int64_t iw) { return iw >= 0 && iw < d.W ? load16(row + iw * kBlock) : zero; };
      for (std::int64_t col = 0; col < inner_lo; ++col)
        _mm512_store_si512(out + col, interleave(column(col - g.pad_w), column(col - g.pad_w + sw)));
      if (sw == 1) {
        for (std::int64_t col = inner_lo; col < inner_hi; ++col)
          _mm512_store_si512(out + col, interleave_halves(load32(row + (col - g.pad_w) * kBlock)));
      } else {
        for (std::int64_t col = inner_lo; col < inner_hi; ++col) {
          const std::uint16_t* at = row + (col - g.pad_w) * kBlock;
          _mm512_store_si512(out + col, interleave(load16(at), load16(at + sw * kBlock)));
        }
      }
      for (std::int64_t col = inner_hi; col < e.cols; ++col)
        _mm512_store_si512(out + col, interleave(column(col - g.pad_w), column(col - g.pad_w + sw)));
    }
  }
}

// The 32 bf16 of a vector widened to f32 and added in pairs of halves: lane i gets v[i] + v[16 + i].
inline __m512 widen_sum(__m512i v) {
  const __m512 low = _mm512_castsi512_ps(_mm512_slli_epi32(_mm512_cvtepu16_epi32(_mm512_castsi512_si256(v)), 16));
  const __m512 high =
      _mm512_castsi512_ps(_mm512_slli_epi32(_mm512_cvtepu16_epi32(_mm512_extracti64x4_epi64(v, 1)), 16));
  return _mm512_add_ps(low, high);
}

// One image's dy pairs: out[ob][oh][p] holds (dy[o][oh][2p], dy[o][oh][2p + 1]) for the 16 channels
// of block ob (zero past the row's end); adds dy's sums to db unless it is null (no bias).
void build_dy_pairs(const ConvDims& d, const Extents& e, const std::uint16_t* dy, __m512i* out, float* db) {
  const std::int64_t full = d.OW / 2;  // pairs with both outputs inside the row
  for (std::int64_t ob = 0; ob < e.out_blocks; ++ob) {
    __m512 sum = _mm512_setzero_ps();
    for (std::int64_t oh = 0; oh < d.OH; ++oh, out += e.pairs) {
      const std::uint16_t* row = dy + (ob * d.OH + oh) * d.OW * kBlock;
      for (std::int64_t p = 0; p < full; ++p) {
        const __m512i both = load32(row + 2 * p * kBlock);
        _mm512_store_si512(out + p, interleave_halves(both));
        if (db != nullptr) sum = _mm512_add_ps(sum, widen_sum(both));
      }
      if (full < e.pairs) {  // an odd width: the last output alone
        const __m512i last = load16(row + 2 * full * kBlock);
        const __m512i alone = _mm512_zextsi256_si512(_mm512_castsi512_si256(last));
        _mm512_store_si512(out + full, interleave_halves(alone));
        if (db != nullptr) sum = _mm512_add_ps(sum, widen_sum(alone));
      }
    }
    if (db != nullptr) _mm512_storeu_ps(db + ob * kBlock, _mm512_add_ps(_mm512_loadu_ps(db + ob * kBlock), sum));
  }
}

// Input channels per tile for `out_blocks` output blocks and width KW: the most (a power of two,
// within a block) that keeps the tile's accumulators in registers; 0 where even one does not fit.
constexpr int channels_per_tile(int out_blocks, int kw) {
  int c = 16;
  while (c > 0 && out_blocks * c * kw > kAccumulators) c /= 2;
  return c;
}

// Where the per-thread partial sums live: part[ob][c][kh][kw][16 output channels of block ob].
struct Part {
  float* at;
  std::int64_t C, KH, KW;
  float* operator()(std::int64_t ob, std::int64_t c, std::int64_t kh, std::int64_t kw) const {
    return at + (((ob * C + c) * KH + kh) * KW + kw) * kBlock;
  }
};

// Adds to part the tile (output blocks ob0 .. ob0 + OB - 1, input channels c0 .. c0 + NC - 1, row kh
// of the kernel, all KW columns) summed over `images` images' pairs.
template <int OB, int NC, int KW>
void tile(const ConvDims& d, const Conv2dGeometry& g, const Extents& e, std::int64_t images, const __m512i* x_pairs,
          const __m512i* dy_pairs, std::int64_t ob0, std::int64_t c0, std::int64_t kh, const Part& part) {
  __m512 acc[OB][NC][KW];
#pragma GCC unroll 8
  for (int b = 0; b < OB; ++b) {
#pragma GCC unroll 16
    for (int c = 0; c < NC; ++c) {
#pragma GCC unroll 8
      for (int kw = 0; kw < KW; ++kw) acc[b][c][kw] = _mm512_load_ps(part(ob0 + b, c0 + c, kh, kw));
    }
  }
  const std::int64_t step = 2 * g.stride_w * kVector;  // bytes between the x pairs of output pairs p and p + 1
  const std::int64_t lane = (c0 % kBlock) * 4;         // the channel's 32-bit pair in a vector
  for (std::int64_t i = 0; i < images; ++i) {
    const __m512i* xi = x_pairs + i * e.x_vectors + (c0 / kBlock) * e.rows * e.cols;
    const __m512i* dyi = dy_pairs + i * e.dy_vectors;
    for (std::int64_t oh = 0; oh < d.OH; ++oh) {
      const char* xrow = reinterpret_cast<const char*>(xi + (oh * g.stride_h + kh) * e.cols) + lane;
      const __m512i* dyrow[OB];
#pragma GCC unroll 8
      for (int b = 0; b < OB; ++b) dyrow[b] = dyi + ((ob0 + b) * d.OH + oh) * e.pairs;
      // Output pair p; kAlone: the last of an odd width, whose second output is not there (dy 0):
      // its x partner is dropped too, or a 0 * inf from a column no window reads would give NaN.
      const auto pair_step = [&]<bool kAlone>(std::int64_t p) {
        __m512bh dyv[OB];
#pragma GCC unroll 8
        for (int b = 0; b < OB; ++b) dyv[b] = reinterpret_cast<__m512bh>(_mm512_load_si512(dyrow[b] + p));
        const char* xp = xrow + p * step;
#pragma GCC unroll 16
        for (int c = 0; c < NC; ++c) {
#pragma GCC unroll 8
          for (int kw = 0; kw < KW; ++kw) {
            std::int32_t pair = 0;
            std::memcpy(&pair, xp + kw * kVector + c * 4, sizeof pair);
            if constexpr (kAlone) pair &= 0xffff;  // x[iw] is the low half, x[iw + sw] the high
            const auto xv = reinterpret_cast<__m512bh>(_mm512_set1_epi32(pair));
#pragma GCC unroll 8
            for (int b = 0; b < OB; ++b) acc[b][c][kw] = _mm512_dpbf16_ps(acc[b][c][kw], dyv[b], xv);
          }
        }
      };
      const std::int64_t full = d.OW / 2;
      for (std::int64_t p = 0; p < full; ++p) pair_step.template operator()<false>(p);
      if (full < e.pairs) pair_step.template operator()<true>(full);
    }
  }
#pragma GCC unroll 8
  for (int b = 0; b < OB; ++b) {
#pragma GCC unroll 16
    for (int c = 0; c < NC; ++c) {
#pragma GCC unroll 8
      for (int kw = 0; kw < KW; ++kw) _mm512_store_ps(part(ob0 + b, c0 + c, kh, kw), acc[b][c][kw]);
    }
  }
}

template <int OB, int KW>
void all_tiles(const ConvDims& d, const Conv2dGeometry& g, const Extents& e, std::int64_t images,
               const __m512i* x_pairs, const __m512i* dy_pairs, const Part& part) {
  constexpr int kNC = channels_per_tile(OB, KW);
  static_assert(kNC > 0);
  for (std::int64_t ob = 0; ob < e.out_blocks; ob += OB) {
    for (std::int64_t c = 0; c < d.C; c += kNC) {
      for (std::int64_t kh = 0; kh < d.KH; ++kh) tile<OB, kNC, KW>(d, g, e, images, x_pairs, dy_pairs, ob, c, kh, part);
    }
  }
}

template <int KW>
void tiles_of_width(const ConvDims& d, const Conv2dGeometry& g, const Extents& e, std::int64_t images,
                    const __m512i* x_pairs, const __m512i* dy_pairs, const Part& part) {
  if constexpr (channels_per_tile(4, KW) > 0) {
    if (e.out_blocks % 4 == 0) return all_tiles<4, KW>(d, g, e, images, x_pairs, dy_pairs, part);
  }
  if (e.out_blocks % 2 == 0) return all_tiles<2, KW>(d, g, e, images, x_pairs, dy_pairs, part);
  all_tiles<1, KW>(d, g, e, images, x_pairs, dy_pairs, part);
}

void tiles(const ConvDims& d, const Conv2dGeometry& g, const Extents& e, std::int64_t images, const __m512i* x_pairs,
           const __m512i* dy_pairs, const Part& part) {
  switch (d.KW) {
    case 3:
      return tiles_of_width<3>(d, g, e, images, x_pairs, dy_pairs, part);
    case 5:
      return tiles_of_width<5>(d, g, e, images, x_pairs, dy_pairs, part);
    case 7:
      return tiles_of_width<7>(d, g, e, images, x_pairs, dy_pairs, part);
    default:
      throw InternalError(fmt::format("bf16 weight gradient: no kernel of width {}", d.KW));
  }
}

}  // namespace

bool bf16_weight_grad_available() {
  static const bool amx = dnnl::get_effective_cpu_isa() >= dnnl::cpu_isa::avx512_core_amx;
  return cpu_has_bf16() && !amx;
}

bool bf16_weight_grad_applies(const ConvDims& d) {
  return bf16_weight_grad_available() && bf16_weight_grad_kernel_on() && d.C > 0 && d.O > 0 && d.C % kBlock == 0 &&
         d.O % kBlock == 0 && (d.KW == 3 || d.KW == 5 || d.KW == 7) && d.N > 0;
}

void bf16_weight_grad(const ConvDims& d, const Conv2dGeometry& g, const std::uint16_t* x, const std::uint16_t* dy,
                      float* dw, std::uint16_t* dw_bf16, float scale, float* db) {
  // Checked here, not inside the threads (an exception cannot leave an OpenMP region).
  DT_CHECK(
      d.C > 0 && d.O > 0 && d.C % kBlock == 0 && d.O % kBlock == 0 && d.N > 0 && (d.KW == 3 || d.KW == 5 || d.KW == 7),
      "bf16 weight gradient: C {} and O {} must be multiples of 16, N {} positive, KW {} 3, 5 or 7", d.C, d.O, d.N,
      d.KW);
  const Extents e(d, g);
  const std::int64_t per_image = e.x_vectors + e.dy_vectors;
  const std::int64_t chunk = std::clamp<std::int64_t>(kChunkBytes / (per_image * kVector), 1, kMaxChunk);
  const std::int64_t weights = d.O * d.C * d.KH * d.KW;
  const std::int64_t part_vectors = (weights + d.O + kBlock - 1) / kBlock;  // dW's partial sums and db's
  const int threads = omp_get_max_threads();
  // The calling thread's scratchpad (dnnl_util.h: 64-byte aligned, kept between calls, as a fresh
  // buffer's first touch would cost more than the pairs it holds): every OpenMP thread's partial
  // sums and image pairs.
  auto* base = static_cast<__m512i*>(
      thread_scratchpad(static_cast<std::size_t>(threads * (part_vectors + chunk * per_image) * kVector)));
#pragma omp parallel num_threads(threads)
  {
    const int t = omp_get_thread_num(), nt = omp_get_num_threads();
    float* part_at = reinterpret_cast<float*>(base + t * part_vectors);
    std::memset(part_at, 0, static_cast<std::size_t>(part_vectors * kVector));
    const Part part{part_at, d.C, d.KH, d.KW};
    float* part_db = part_at + weights;
    __m512i* x_pairs = base + nt * part_vectors + t * chunk * per_image;
    __m512i* dy_pairs = x_pairs + chunk * e.x_vectors;
    const std::int64_t n_end = d.N * (t + 1) / nt;
    const std::int64_t x_image = d.C * d.H * d.W, dy_image = d.O * d.OH * d.OW;
    for (std::int64_t n = d.N * t / nt; n < n_end; n += chunk) {
      const std::int64_t images = std::min(chunk, n_end - n);
      for (std::int64_t i = 0; i < images; ++i) {
        build_x_pairs(d, g, e, x + (n + i) * x_image, x_pairs + i * e.x_vectors);
        build_dy_pairs(d, e, dy + (n + i) * dy_image, dy_pairs + i * e.dy_vectors, db != nullptr ? part_db : nullptr);
      }
      tiles(d, g, e, images, x_pairs, dy_pairs, part);
    }
    // The threads' sums, each thread a share of the (output block, input channel) rows, into
    // dW's plain [O, C, KH, KW] order.
#pragma omp barrier
    const std::int64_t taps = d.KH * d.KW, rows = e.out_blocks * d.C;
    const __m512 times = _mm512_set1_ps(scale);
    for (std::int64_t r = rows * t / nt; r < rows * (t + 1) / nt; ++r) {
      const std::int64_t ob = r / d.C, c = r % d.C;
      for (std::int64_t k = 0; k < taps; ++k) {
        const std::int64_t at = (r * taps + k) * kBlock;
        __m512 sum = _mm512_load_ps(reinterpret_cast<const float*>(base) + at);
        for (int u = 1; u < nt; ++u)
          sum = _mm512_add_ps(sum, _mm512_load_ps(reinterpret_cast<const float*>(base + u * part_vectors) + at));
        const std::int64_t out = ((ob * kBlock) * d.C + c) * taps + k, stride = d.C * taps;
        if (dw_bf16 != nullptr) {
          alignas(32) std::uint16_t lanes[kBlock];
          _mm256_store_si256(reinterpret_cast<__m256i*>(lanes),
                             reinterpret_cast<__m256i>(_mm512_cvtneps_pbh(_mm512_mul_ps(sum, times))));
          for (std::int64_t i = 0; i < kBlock; ++i) dw_bf16[out + i * stride] = lanes[i];
        } else {
          alignas(64) float lanes[kBlock];
          _mm512_store_ps(lanes, sum);
          for (std::int64_t i = 0; i < kBlock; ++i) dw[out + i * stride] = lanes[i];
        }
      }
    }
    if (db != nullptr && t == 0) {
      for (std::int64_t o = 0; o < d.O; ++o) {
        float sum = 0.0f;
        for (int u = 0; u < nt; ++u) sum += reinterpret_cast<const float*>(base + u * part_vectors)[weights + o];
        db[o] = sum;
      }
    }
  }
}

#else

bool bf16_weight_grad_available() { return false; }
bool bf16_weight_grad_applies(const ConvDims&) { return false; }

void bf16_weight_grad(const ConvDims&, const Conv2dGeometry&, const std::uint16_t*, const std::uint16_t*, float*,
                      std::uint16_t*, float, float*) {
  throw InternalError("bf16 weight gradient: built without AVX512_BF16");
}

#endif

}  // namespace dtrain::cpu
