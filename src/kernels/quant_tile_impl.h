// The quantized matmul tiles of every SIMD table, written once over a vector policy V (one per
// ISA: avx512/avx512_quant_vec.h, avx2/avx2_quant_vec.h). Include only from a SIMD translation
// unit, after its policy header and with `#pragma GCC optimize("fp-contract=off")`: everything
// here sits in an anonymous namespace so that each ISA's TU keeps its own copies (an inline
// function with external linkage compiled with AVX-512 flags could be chosen by the linker for
// the AVX2 table).
//
// Layout: rows in lanes. For a group of V::kLanes weight rows, each block is transposed once
// into vectors whose lane r holds 4 consecutive quants of row r; a token's 4 matching
// activation bytes are broadcast to all lanes, and V::dot (vpdpbusd, or maddubs + madd on AVX2)
// accumulates the integer dot products of all rows at once. The float accumulator's lane r is
// output row r, so no horizontal sums are needed. The transposed blocks of a chunk are kept on
// the stack and reused for every token of the tile (GEMM); a single token (GEMV) runs the same
// code.
//
// Every float step per (row, token) is the reference's (kernels/ref/ref_dot*.cpp) in the same
// order with separate multiplies and adds (fused where the reference fuses, Q4_1 / Q5_1 / Q6_K /
// MXFP4), and the integer sums are exact, so these tiles give the reference's result bit for bit
// at any tile shape, thread count or token count.
//
// The integer products need one unsigned operand: the weight quants are stored unsigned
// (0..63 at most, so AVX2's 16-bit pair sums cannot saturate), and the offsets of the signed
// types come back through activation sums: Q4_0 / Q5_0 use the int32 block sums the matmul
// driver appends to Q8_0 rows (kernel_table.h), Q3_K / Q6_K the Q8_K bsums. Q8_0 weights go
// through V's own signed path (V::q8_start / q8_dot, or V::q8_bias / q8_lane: KindQ8_0).
#pragma once

#include <cstddef>
#include <cstdint>
#include <type_traits>

#include "kernels/kernel_table.h"
#include "quant/blocks.h"

namespace minfer::kernels::quant_tile {
namespace {

constexpr int64_t kMaxTok = 64;  // tokens per pass over a row group (state on the stack)
constexpr int kTokGroup = 4;     // tokens whose accumulators live in registers together

// Moves bit `from` of every byte of v to bit `to` (other bits cleared). 16-bit shifts are
// safe: a byte's bit `to` is filled from bit `from` of the same byte.
template <class V>
typename V::I move_bit(typename V::I v, int from, int to) {
  const typename V::I mask = V::set1_8(static_cast<int8_t>(1 << to));
  if (from > to) return V::and_(V::srli16(v, from - to), mask);
  if (from < to) return V::and_(V::slli16(v, to - from), mask);
  return V::and_(v, mask);
}

// Lane r: bytes b = 0..3 hold bit (shift + b) of lane r of qh as 0 or 0x10 (the fifth bit of
// Q5_0 / Q5_1 elements shift .. shift + 3). The multiply spreads 4 bits to bit 0 of 4 bytes
// (bit b lands at 8b; the partial products never overlap, so there are no carries).
template <class V>
typename V::I fifth_bits(typename V::I qh, int shift) {
  const typename V::I nib = V::and_(V::srli32(qh, shift), V::set1(0xf));
  const typename V::I spread = V::and_(V::mullo(nib, V::set1(0x00204081)), V::set1(0x01010101));
  return V::slli32(spread, 4);
}

// Byte k of the bytes gathered (4 per lane) in w[0], w[1], ...
template <class V>
typename V::I byte_of(const typename V::I* w, int k) {
  return V::and_(V::srli32(w[k / 4], 8 * (k % 4)), V::set1(0xff));
}

// Signed byte k, sign-extended to int32.
template <class V>
typename V::I sbyte_of(const typename V::I* w, int k) {
  return V::srai32(V::slli32(w[k / 4], 24 - 8 * (k % 4)), 24);
}

// Two int16 values per lane (a low, b high).
template <class V>
typename V::I pair16_of(typename V::I a, typename V::I b) {
  return V::or_(V::and_(a, V::set1(0xffff)), V::slli32(b, 16));
}

// llama.cpp's hsum_float_8 order (ref::hsum_float_8) over 8 accumulators, lane by lane:
// ((a0 + a4) + (a2 + a6)) + ((a1 + a5) + (a3 + a7)).
template <class V>
typename V::F hsum8(const typename V::F* acc) {
  const typename V::F lo = V::fadd(V::fadd(acc[0], acc[4]), V::fadd(acc[2], acc[6]));
  const typename V::F hi = V::fadd(V::fadd(acc[1], acc[5]), V::fadd(acc[3], acc[7]));
  return V::fadd(lo, hi);
}

// Two int16 values in one int32 lane (for V::dot16 against a pair of bsums).
inline int32_t pair16(int a, int b) {
  return static_cast<int32_t>(static_cast<uint16_t>(a) |
                              (static_cast<uint32_t>(static_cast<uint16_t>(b)) << 16));
}

// Activation rows. Q8_0: BlockQ8_0[n_blocks], then int32 block sums, lane starts and f32 scales
// (kernel_table.h MatmulTileFn).
struct ActQ8_0 {
  const BlockQ8_0* blocks;
  const int32_t* sums;
  const int32_t* starts;  // [n_blocks][8]
  const float* scales;
  static ActQ8_0 of(const uint8_t* row, int64_t n_blocks) {
    const size_t n = static_cast<size_t>(n_blocks);
    return {reinterpret_cast<const BlockQ8_0*>(row),
            reinterpret_cast<const int32_t*>(row + q8_0_act_sums_offset(n)),
            reinterpret_cast<const int32_t*>(row + q8_0_act_starts_offset(n)),
            reinterpret_cast<const float*>(row + q8_0_act_scales_offset(n))};
  }
};
struct ActQ8_1 {
  const BlockQ8_1* blocks;
  static ActQ8_1 of(const uint8_t* row, int64_t) {
    return {reinterpret_cast<const BlockQ8_1*>(row)};
  }
};
struct ActQ8K {
  const BlockQ8K* blocks;
  static ActQ8K of(const uint8_t* row, int64_t) { return {reinterpret_cast<const BlockQ8K*>(row)}; }
};

// A block's words for the packs, lanes = rows, read from a GGUF-layout row group: `off` is the
// block's offset in each row; the members take offsets within the block.
template <class V>
struct GroupSource {
  const typename V::Group& g;
  size_t off;
  // out[i]: dword i of the 32 bytes at o.
  void transpose32(size_t o, typename V::I out[8]) const { V::transpose32(g, off + o, out); }
  typename V::I u32(size_t o) const { return V::gather_u32(g, off + o); }
  // The f16s at o and o + 2.
  void f16_pair(size_t o, typename V::F& a, typename V::F& b) const {
    V::gather_f16_pair(g, off + o, a, b);
  }
  // The f16 at o, the block's last 2 bytes.
  typename V::F f16_last(size_t o) const { return V::gather_f16(g, off + o - 2, true); }
};

// ---- 32-element blocks ----

// The 16 bytes of 4-bit pairs at `off` of each row (element j low nibble, j + 16 high), lanes =
// rows: q[j] the low nibbles of dword j (elements 4j..4j+3), q[4 + j] its high ones.
template <class V>
void split_nibbles(const typename V::Group& g, size_t off, typename V::I q[8]) {
  typename V::I t[4];
  V::transpose16(g, off, t);
  const typename V::I low4 = V::set1_8(0x0f);
  for (int j = 0; j < 4; ++j) {
    q[j] = V::and_(t[j], low4);
    q[4 + j] = V::and_(V::srli16(t[j], 4), low4);
  }
}

template <class V>
struct PackedQ32 {
  typename V::I q[8];  // [dword] lanes = rows: elements 4j..4j+3 (j < 4), 16 + 4(j - 4).. (j >= 4)
  typename V::F d;     // lanes = rows
  typename V::F m;     // Q4_1 / Q5_1 minimum (unused otherwise)
};

// Q8_0 × Q8_0 in llama.cpp's x86 order (ref vec_dot_q8_0_q8_0): 8 accumulators per (row, token),
// accumulator l fed by fma(d_w d_x, Σ of elements 4l..4l+3, acc_l), summed at the end in
// hsum_float_8's order. q[l] holds dword l of the block (lanes = rows) as V::q8_dot takes it, c[l]
// the start V::q8_dot needs for it (V::q8_start: the offset an unsigned operand adds, or 0).
template <class V>
struct PackedQ8_0 {
  typename V::I q[8];
  typename V::I c[8];
  typename V::F d;
};

// Policies with V::kQ8LaneStarts (AVX-512, AVX-VNNI) take each lane's dot as a float from the
// activation row's lane starts instead (V::q8_lane on q[l] = V::q8_bias of the dword; PackedQ32's q
// and d).
template <class V>
constexpr bool kQ8LaneStarts = requires {
  V::kQ8LaneStarts;
};

template <class V>
struct KindQ8_0 {
  static constexpr bool kStarts = kQ8LaneStarts<V>;
  using Packed = std::conditional_t<kStarts, PackedQ32<V>, PackedQ8_0<V>>;
  using Act = ActQ8_0;
  static constexpr int kBlock = kQK8_0;
  // PackedQ8_0 holds twice PackedQ32's vectors: half the blocks in the same stack.
  static constexpr int64_t kChunk = kStarts ? 32 : 16;
  static constexpr int kAccs = 8;
  // The tokens whose 8 accumulators stay in registers together: with lane starts 3 under
  // AVX-512 (24 of its 32 registers; block_tokens loads each weight vector once for them) and 1
  // under AVX-VNNI (16 registers: 2 tokens measured slower), else 2.
  static constexpr int kTokGroup = kStarts ? (V::kLanes == 16 ? 3 : 1) : 2;

  static void pack(const typename V::Group& g, int64_t b, Packed& p) {
    const size_t off = static_cast<size_t>(b) * sizeof(BlockQ8_0);
    V::transpose32(g, off + offsetof(BlockQ8_0, qs), p.q);
    p.d = V::gather_f16(g, off, false);
    complete(p);
  }
  // The form q8_dot / q8_lane take, once q holds the block's dwords.
  static void complete(Packed& p) {
    for (int l = 0; l < 8; ++l) {
      if constexpr (kStarts) {
        p.q[l] = V::q8_bias(p.q[l]);
      } else {
        p.c[l] = V::q8_start(p.q[l]);
      }
    }
  }
  // Lane l of token a's block b as a float (lane starts only).
  static typename V::F lane(const Packed& p, const Act& a, int64_t b, int l) {
    return V::q8_lane(a.starts + 8 * b + l, p.q[l], a.blocks[b].qs + 4 * l);
  }
  // T tokens' block b at once (lane starts only): each weight vector serves every token.
  template <int T>
  static void block_tokens(const Packed& p, const Act* a, int64_t b, typename V::F (*acc)[kAccs]) {
    typename V::F d[T];
    for (int t = 0; t < T; ++t) d[t] = V::fmul(p.d, V::fset1(a[t].scales[b]));
      // Unrolled, so that the accumulators are registers (GCC left this loop rolled, the
      // accumulators on the stack, and the tile half as fast).
#pragma GCC unroll 8
    for (int l = 0; l < 8; ++l) {
      for (int t = 0; t < T; ++t) acc[t][l] = V::fmadd(d[t], lane(p, a[t], b, l), acc[t][l]);
    }
  }
  static void block(const Packed& p, const Act& a, int64_t b, typename V::F* acc) {
    if constexpr (kStarts) {
      const typename V::F d = V::fmul(p.d, V::fset1(a.scales[b]));
#pragma GCC unroll 8
      for (int l = 0; l < 8; ++l) acc[l] = V::fmadd(d, lane(p, a, b, l), acc[l]);
    } else {
      const BlockQ8_0& x = a.blocks[b];
      const typename V::F d = V::fmul(p.d, V::fset1(V::f16(x.d)));
      for (int l = 0; l < 8; ++l) {
        const typename V::I s = V::q8_dot(p.c[l], p.q[l], V::bcast(x.qs + 4 * l));
        acc[l] = V::fmadd(d, V::cvt(s), acc[l]);
      }
    }
  }
  static typename V::F finish(const typename V::F* acc) {
    return hsum8<V>(acc);
  }
};

// Q4_0 / Q5_0 (offset 8 / 16, Q8_0 activations) and Q4_1 / Q5_1 (minimum, Q8_1 activations).
template <class V, class Block, bool kFifthBit, bool kMin>
struct KindQ32 {
  using Packed = PackedQ32<V>;
  using Act = std::conditional_t<kMin, ActQ8_1, ActQ8_0>;
  static constexpr int kBlock = 32;
  static constexpr int64_t kChunk = 32;

  static void pack(const typename V::Group& g, int64_t b, Packed& p) {
    const size_t off = static_cast<size_t>(b) * sizeof(Block);
    split_nibbles<V>(g, off + offsetof(Block, qs), p.q);
    if constexpr (kFifthBit) {
      const typename V::I qh = V::gather_u32(g, off + offsetof(Block, qh));
      for (int j = 0; j < 4; ++j) {
        p.q[j] = V::or_(p.q[j], fifth_bits<V>(qh, 4 * j));
        p.q[4 + j] = V::or_(p.q[4 + j], fifth_bits<V>(qh, 16 + 4 * j));
      }
    }
    if constexpr (kMin) {
      V::gather_f16_pair(g, off, p.d, p.m);
    } else {
      p.d = V::gather_f16(g, off, false);
    }
  }

  // Q4_1 / Q5_1 keep 9 accumulators per (row, token), as llama.cpp's x86
  // ggml_vec_dot_q4_1_q8_1 / q5_1 do (ref vec_dot_q4_1_q8_1): 8 float lanes, lane l fed by
  // fma(d_w d_x, Σ of elements 4l..4l+3, lane), and the m_w s_x terms summed apart.
  static constexpr int kAccs = kMin ? 9 : 1;

  static void block(const Packed& p, const Act& a, int64_t b, typename V::F* acc) {
    const auto& x = a.blocks[b];
    const typename V::F dx = V::fset1(V::f16(x.d));
    if constexpr (kMin) {
      const typename V::F d = V::fmul(p.d, dx);
      acc[8] = V::fadd(acc[8], V::fmul(p.m, V::fset1(V::f16(x.s))));
      for (int l = 0; l < 8; ++l) {
        const typename V::I s = V::dot(V::set1(0), p.q[l], V::bcast(x.qs + 4 * l));
        acc[l] = V::fmadd(d, V::cvt(s), acc[l]);
      }
    } else {
      typename V::I s = V::set1((kFifthBit ? -16 : -8) * a.sums[b]);
      for (int j = 0; j < 4; ++j) s = V::dot(s, p.q[j], V::bcast(x.qs + 4 * j));
      for (int j = 0; j < 4; ++j) s = V::dot(s, p.q[4 + j], V::bcast(x.qs + 16 + 4 * j));
      if constexpr (kFifthBit) {
        // ref vec_dot_q5_0_q8_0: d_w d_x sumi.
        acc[0] = V::fadd(acc[0], V::fmul(V::fmul(p.d, dx), V::cvt(s)));
      } else {
        // ref vec_dot_q4_0_q8_0: (sumi d_w) d_x.
        acc[0] = V::fadd(acc[0], V::fmul(V::fmul(V::cvt(s), p.d), dx));
      }
    }
  }

  // The result from the accumulators: llama.cpp's hsum_float_8 order, then + Σ m s.
  static typename V::F finish(const typename V::F* acc) {
    if constexpr (kMin) {
      return V::fadd(hsum8<V>(acc), acc[8]);
    } else {
      return acc[0];
    }
  }
};

template <class V>
using KindQ4_0 = KindQ32<V, BlockQ4_0, false, false>;
template <class V>
using KindQ4_1 = KindQ32<V, BlockQ4_1, false, true>;
template <class V>
using KindQ5_0 = KindQ32<V, BlockQ5_0, true, false>;
template <class V>
using KindQ5_1 = KindQ32<V, BlockQ5_1, true, true>;

// MXFP4 × Q8_0: the codes become table value + 12 (0..24, unsigned) by a byte lookup, and the
// 12 Σx this adds comes back through the activation block sums, as Q4_0's offset 8 does.
inline constexpr int8_t kMxfp4Unsigned[16] = {12, 13, 14, 15, 16, 18, 20, 24,
                                              12, 11, 10, 9,  8,  6,  4,  0};

template <class V>
struct KindMxfp4 {
  using Packed = PackedQ32<V>;
  using Act = ActQ8_0;
  static constexpr int kBlock = kQKMxfp4;
  static constexpr int64_t kChunk = 32;

  static void pack(const typename V::Group& g, int64_t b, Packed& p) {
    const size_t off = static_cast<size_t>(b) * sizeof(BlockMxfp4);
    split_nibbles<V>(g, off + offsetof(BlockMxfp4, qs), p.q);
    for (typename V::I& q : p.q) q = V::lookup16(kMxfp4Unsigned, q);
    p.d = scale_of(V::and_(V::gather_u32(g, off + offsetof(BlockMxfp4, e)), V::set1(0xff)));
  }
  // 2^(e - 128) of each lane's exponent e (0..255) exactly, as the product of the normal floats
  // 2^(a - 64) and 2^(e - a - 64) (a = e / 2; exponent fields 63..191), which also gives e < 2
  // its subnormal.
  static typename V::F scale_of(typename V::I e) {
    const typename V::I a = V::srli32(e, 1);
    const typename V::I bias = V::set1(63);
    const typename V::F lo = V::as_float(V::slli32(V::add(a, bias), 23));
    const typename V::F hi = V::as_float(V::slli32(V::add(V::sub(e, a), bias), 23));
    return V::fmul(lo, hi);
  }
  // ref vec_dot_mxfp4_q8_0: fma(sumi, 2^(e - 128) d_x, acc).
  static typename V::F block(const Packed& p, const Act& a, int64_t b, typename V::F acc) {
    const BlockQ8_0& x = a.blocks[b];
    typename V::I s = V::set1(-12 * a.sums[b]);
    for (int j = 0; j < 4; ++j) s = V::dot(s, p.q[j], V::bcast(x.qs + 4 * j));
    for (int j = 0; j < 4; ++j) s = V::dot(s, p.q[4 + j], V::bcast(x.qs + 16 + 4 * j));
    const typename V::F d = V::fmul(p.d, V::fset1(V::f16(x.d)));
    return V::fmadd(V::cvt(s), d, acc);
  }
};

// ---- Q4_K / Q5_K × Q8_K ----

template <class V>
struct PackedQ4K {
  typename V::I q[8][8];  // [sub-block j][dword] lanes = rows: 4- or 5-bit quants as u8
  typename V::I sc[8];    // [j] 6-bit scale
  typename V::I mins[8];  // [j] 6-bit min in both int16 halves
  typename V::F d, dmin;
};

// The K-quant kinds' pack_from and block_from stay out of line ([[gnu::noinline]]): a call per
// 256-element block costs nothing, and GCC's own choice moved with the size of the translation
// unit; inlined into the x16 GEMV loop, Q6_K's pack_from spilled registers and decode slowed.
template <class V, class Block, bool kFifthBit>
struct KindK4 {
  using Packed = PackedQ4K<V>;
  using Act = ActQ8K;
  static constexpr int kBlock = kQKK;
  static constexpr int64_t kChunk = 4;

  static void pack(const typename V::Group& g, int64_t b, Packed& p) {
    pack_from(GroupSource<V>{g, static_cast<size_t>(b) * sizeof(Block)}, p);
  }

  // The block's words read through `s` (GroupSource, or another layout's source with the same
  // members).
  template <class Source>
  [[gnu::noinline]] static void pack_from(const Source& s, Packed& p) {
    typename V::I qh[8];
    if constexpr (kFifthBit) s.transpose32(offsetof(Block, qh), qh);
    for (int c = 0; c < 4; ++c) {
      // Byte l of 32-byte chunk c: element 64c + l (low nibble), 64c + 32 + l (high); the fifth
      // bit of sub-block j (element 32j + l) is bit j of qh[l].
      typename V::I packed[8];
      s.transpose32(offsetof(Block, qs) + 32 * c, packed);
      for (int i = 0; i < 8; ++i) quants(packed[i], qh[i], c, p.q[2 * c][i], p.q[2 * c + 1][i]);
    }
    unpack_scales(s, p.sc, p.mins);
    s.f16_pair(offsetof(Block, d), p.d, p.dmin);
  }

  // Dword i of chunk c: the quants of sub-blocks 2c (lo) and 2c + 1 (hi), the fifth bit from
  // dword i of qh where the type has one.
  static void quants(typename V::I packed, typename V::I qh, int c, typename V::I& lo,
                     typename V::I& hi) {
    const typename V::I low4 = V::set1_8(0x0f);
    lo = V::and_(packed, low4);
    hi = V::and_(V::srli16(packed, 4), low4);
    if constexpr (kFifthBit) {
      lo = V::or_(lo, move_bit<V>(qh, 2 * c, 4));
      hi = V::or_(hi, move_bit<V>(qh, 2 * c + 1, 4));
    }
  }

  // The 12 packed scale bytes of every row, unpacked in the lanes (see BlockQ4K): sc[j], and
  // mins[j] in both int16 halves.
  template <class Source>
  static void unpack_scales(const Source& s, typename V::I sc[8], typename V::I mins[8]) {
    const typename V::I low4 = V::set1_8(0x0f);
    typename V::I w[3];
    for (int i = 0; i < 3; ++i) w[i] = s.u32(offsetof(Block, scales) + 4 * i);
    const typename V::I low6 = V::set1(63);  // (low4, 0x0f in every byte, also fits the bytes)
    for (int j = 0; j < 8; ++j) {
      typename V::I scale, min;
      if (j < 4) {
        scale = V::and_(byte_of<V>(w, j), low6);
        min = V::and_(byte_of<V>(w, j + 4), low6);
      } else {
        const typename V::I packed = byte_of<V>(w, j + 4);
        scale = V::or_(V::and_(packed, low4), V::slli32(V::srli32(byte_of<V>(w, j - 4), 6), 4));
        min = V::or_(V::srli32(packed, 4), V::slli32(V::srli32(byte_of<V>(w, j), 6), 4));
      }
      sc[j] = scale;
      mins[j] = pair16_of<V>(min, min);
    }
  }

  // block(pack_from(s)) for one token without the Packed in memory: a GEMV uses each block
  // once, and the 4 KB of unpacked quants (AVX-512) went to L1 and back for that one use. The
  // same sub-block sums (exact integers) and the same float steps: the same bits.
  template <class Source>
  [[gnu::noinline]] static typename V::F block_from(const Source& s, const Act& a, int64_t b,
                                                    typename V::F acc) {
    const BlockQ8K& x = a.blocks[b];
    typename V::I qh[8];
    if constexpr (kFifthBit) s.transpose32(offsetof(Block, qh), qh);
    typename V::I sums[8];  // [sub-block j] Σ q_j · x_j
    for (int c = 0; c < 4; ++c) {
      typename V::I packed[8];
      s.transpose32(offsetof(Block, qs) + 32 * c, packed);
      typename V::I lo_sum = V::set1(0);
      typename V::I hi_sum = V::set1(0);
      for (int i = 0; i < 8; ++i) {
        typename V::I lo, hi;
        quants(packed[i], qh[i], c, lo, hi);
        lo_sum = V::dot(lo_sum, lo, V::bcast(x.qs + 32 * (2 * c) + 4 * i));
        hi_sum = V::dot(hi_sum, hi, V::bcast(x.qs + 32 * (2 * c + 1) + 4 * i));
      }
      sums[2 * c] = lo_sum;
      sums[2 * c + 1] = hi_sum;
    }
    typename V::I sc[8], mins[8];
    unpack_scales(s, sc, mins);
    typename V::F d, dmin;
    s.f16_pair(offsetof(Block, d), d, dmin);
    return finish_block(sums, sc, mins, d, dmin, x, acc);
  }

  // As ref dot_k4_superblock: isum = Σ_j sc_j · (q_j · x_j), summins = Σ_j m_j · (bsums of
  // sub-block j), acc + ((d dx) isum - (dmin dx) summins).
  static typename V::F block(const Packed& p, const Act& a, int64_t b, typename V::F acc) {
    const BlockQ8K& x = a.blocks[b];
    typename V::I sums[8];
    for (int j = 0; j < 8; ++j) {
      sums[j] = V::set1(0);
      for (int i = 0; i < 8; ++i) {
        sums[j] = V::dot(sums[j], p.q[j][i], V::bcast(x.qs + 32 * j + 4 * i));
      }
    }
    return finish_block(sums, p.sc, p.mins, p.d, p.dmin, x, acc);
  }

  // From the sub-block sums on: isum = Σ_j sc_j sums_j, summins = Σ_j m_j bsums_j, and the
  // float steps.
  static typename V::F finish_block(const typename V::I sums[8], const typename V::I sc[8],
                                    const typename V::I mins[8], typename V::F d,
                                    typename V::F dmin, const BlockQ8K& x, typename V::F acc) {
    typename V::I isum = V::set1(0);
    for (int j = 0; j < 8; ++j) isum = V::add(isum, V::mullo(sums[j], sc[j]));
    return finish_isum(isum, mins, d, dmin, x, acc);
  }

  // From isum (exact: any way of summing it gives the same integer) on: summins and the float
  // steps.
  [[gnu::always_inline]] static inline typename V::F finish_isum(
      typename V::I isum, const typename V::I mins[8], typename V::F d, typename V::F dmin,
      const BlockQ8K& x, typename V::F acc) {
    typename V::I summins = V::set1(0);
    for (int j = 0; j < 8; ++j) summins = V::dot16(summins, mins[j], V::bcast(x.bsums + 2 * j));
    const typename V::F dx = V::fset1(x.d);
    const typename V::F pos = V::fmul(V::fmul(d, dx), V::cvt(isum));
    const typename V::F neg = V::fmul(V::fmul(dmin, dx), V::cvt(summins));
    return V::fadd(acc, V::fsub(pos, neg));
  }
};

template <class V>
using KindQ4K = KindK4<V, BlockQ4K, false>;
template <class V>
using KindQ5K = KindK4<V, BlockQ5K, true>;

// ---- 16-element sub-blocks: Q2_K, Q3_K, Q6_K × Q8_K ----

template <class V>
struct PackedK16 {
  typename V::I q[16][4];    // [sub-block of 16][dword] lanes = rows: unsigned quants as u8
  typename V::I sc[16];      // [sub-block] scale (Q6_K: as V::scale_operand)
  typename V::I sc_pair[8];  // [i] Q3_K: scales 2i, 2i + 1 (Q6_K: -32 times them); Q2_K: mins;
                             // int16 halves
  typename V::F d, dmin;
};

// Sub-block j of a Q8_K block covers its quants 16j .. 16j + 15 and bsums[j] in all three.
template <class V>
typename V::I sub_block_dots(const PackedK16<V>& p, const BlockQ8K& x) {
  typename V::I isum = V::set1(0);
  for (int j = 0; j < 16; ++j) {
    typename V::I s = V::set1(0);
    for (int i = 0; i < 4; ++i) s = V::dot(s, p.q[j][i], V::bcast(x.qs + 16 * j + 4 * i));
    isum = V::add(isum, V::mullo(s, p.sc[j]));
  }
  return isum;
}

template <class V>
typename V::I pair_bsums(const PackedK16<V>& p, const BlockQ8K& x) {
  typename V::I s = V::set1(0);
  for (int i = 0; i < 8; ++i) s = V::dot16(s, p.sc_pair[i], V::bcast(x.bsums + 2 * i));
  return s;
}

template <class V>
struct KindQ2K {
  using Packed = PackedK16<V>;
  using Act = ActQ8K;
  static constexpr int kBlock = kQKK;
  static constexpr int64_t kChunk = 4;

  static void pack(const typename V::Group& g, int64_t b, Packed& p) {
    const size_t off = static_cast<size_t>(b) * sizeof(BlockQ2K);
    const typename V::I low2 = V::set1_8(0x03);
    for (int h = 0; h < 2; ++h) {
      // Element 128h + 32k + l: bits 2k..2k+1 of qs[32h + l]; sub-block 8h + 2k + l / 16.
      typename V::I t[8];
      V::transpose32(g, off + offsetof(BlockQ2K, qs) + 32 * h, t);
      for (int k = 0; k < 4; ++k) {
        for (int i = 0; i < 8; ++i) {
          p.q[8 * h + 2 * k + i / 4][i % 4] = V::and_(V::srli16(t[i], 2 * k), low2);
        }
      }
    }
    // Scale j: low nibble of scales[j]; min: high nibble (see BlockQ2K).
    typename V::I w[4];
    for (int i = 0; i < 4; ++i) w[i] = V::gather_u32(g, off + offsetof(BlockQ2K, scales) + 4 * i);
    for (int j = 0; j < 16; ++j) p.sc[j] = V::and_(byte_of<V>(w, j), V::set1(0xf));
    for (int i = 0; i < 8; ++i) {
      p.sc_pair[i] =
          pair16_of<V>(V::srli32(byte_of<V>(w, 2 * i), 4), V::srli32(byte_of<V>(w, 2 * i + 1), 4));
    }
    V::gather_f16_pair(g, off + offsetof(BlockQ2K, d), p.d, p.dmin);
  }

  // As ref vec_dot_q2_K_q8_K: acc + ((dx d) isum - (dx dmin) summins).
  static typename V::F block(const Packed& p, const Act& a, int64_t b, typename V::F acc) {
    const BlockQ8K& x = a.blocks[b];
    const typename V::I isum = sub_block_dots<V>(p, x);
    const typename V::I summins = pair_bsums<V>(p, x);
    const typename V::F dx = V::fset1(x.d);
    const typename V::F pos = V::fmul(V::fmul(dx, p.d), V::cvt(isum));
    const typename V::F neg = V::fmul(V::fmul(dx, p.dmin), V::cvt(summins));
    return V::fadd(acc, V::fsub(pos, neg));
  }
};

template <class V>
struct KindQ3K {
  using Packed = PackedK16<V>;
  using Act = ActQ8K;
  static constexpr int kBlock = kQKK;
  static constexpr int64_t kChunk = 4;

  static void pack(const typename V::Group& g, int64_t b, Packed& p) {
    const size_t off = static_cast<size_t>(b) * sizeof(BlockQ3K);
    const typename V::I low2 = V::set1_8(0x03);
    typename V::I hm[8];
    V::transpose32(g, off + offsetof(BlockQ3K, hmask), hm);
    for (int h = 0; h < 2; ++h) {
      // Element 128h + 32k + l: low bits as Q2_K, high bit = bit 4h + k of hmask[l]; stored as
      // q + 4 · high in 0..7 (the level is that minus 4, applied through the bsums).
      typename V::I t[8];
      V::transpose32(g, off + offsetof(BlockQ3K, qs) + 32 * h, t);
      for (int k = 0; k < 4; ++k) {
        for (int i = 0; i < 8; ++i) {
          p.q[8 * h + 2 * k + i / 4][i % 4] =
              V::or_(V::and_(V::srli16(t[i], 2 * k), low2), move_bit<V>(hm[i], 4 * h + k, 2));
        }
      }
    }
    alignas(64) int32_t sc[16][V::kLanes];
    alignas(64) int32_t pairs[8][V::kLanes];
    for (int r = 0; r < V::kLanes; ++r) {
      const uint8_t* s = g.row[r] + off + offsetof(BlockQ3K, scales);
      int scale[16];
      for (int j = 0; j < 16; ++j) {
        const int low = j < 8 ? (s[j] & 0xf) : (s[j - 8] >> 4);
        const int high = (s[8 + j % 4] >> (2 * (j / 4))) & 3;
        scale[j] = (low | (high << 4)) - 32;
        sc[j][r] = scale[j];
      }
      for (int i = 0; i < 8; ++i) pairs[i][r] = pair16(scale[2 * i], scale[2 * i + 1]);
    }
    for (int j = 0; j < 16; ++j) p.sc[j] = V::load(sc[j]);
    for (int i = 0; i < 8; ++i) p.sc_pair[i] = V::load(pairs[i]);
    // d is the last 2 bytes of the block: gather the 4 bytes ending there (high half).
    p.d = V::gather_f16(g, off + offsetof(BlockQ3K, d) - 2, true);
  }

  // As ref vec_dot_q3_K_q8_K: isum = Σ_j sc_j ((u_j - 4) · x_j), the -4 applied as
  // -4 Σ_j sc_j bsums_j; acc + (d dx) isum.
  static typename V::F block(const Packed& p, const Act& a, int64_t b, typename V::F acc) {
    const BlockQ8K& x = a.blocks[b];
    typename V::I isum = sub_block_dots<V>(p, x);
    isum = V::sub(isum, V::slli32(pair_bsums<V>(p, x), 2));
    return V::fadd(acc, V::fmul(V::fmul(p.d, V::fset1(x.d)), V::cvt(isum)));
  }
};

template <class V>
struct KindQ6K {
  using Packed = PackedK16<V>;
  using Act = ActQ8K;
  static constexpr int kBlock = kQKK;
  static constexpr int64_t kChunk = 4;

  static void pack(const typename V::Group& g, int64_t b, Packed& p) {
    pack_from(GroupSource<V>{g, static_cast<size_t>(b) * sizeof(BlockQ6K)}, p);
  }

  // As KindK4::pack_from.
  template <class Source>
  [[gnu::noinline]] static void pack_from(const Source& s, Packed& p) {
    const typename V::I low4 = V::set1_8(0x0f);
    const typename V::I top2 = V::set1_8(0x30);
    for (int h = 0; h < 2; ++h) {
      typename V::I ql0[8], ql1[8], qh[8];
      s.transpose32(offsetof(BlockQ6K, ql) + 64 * h, ql0);
      s.transpose32(offsetof(BlockQ6K, ql) + 64 * h + 32, ql1);
      s.transpose32(offsetof(BlockQ6K, qh) + 32 * h, qh);
      // Element 128h + 32k + l: low 4 bits from ql[l + 32 (k & 1)] (high nibble for k >= 2),
      // bits 4-5 from bits 2k..2k+1 of qh[l]. Dwords 0-3 are sub-block 8h + 2k, 4-7 the next.
      for (int i = 0; i < 8; ++i) {
        const typename V::I q[4] = {
            V::or_(V::and_(ql0[i], low4), V::and_(V::slli16(qh[i], 4), top2)),
            V::or_(V::and_(ql1[i], low4), V::and_(V::slli16(qh[i], 2), top2)),
            V::or_(V::and_(V::srli16(ql0[i], 4), low4), V::and_(qh[i], top2)),
            V::or_(V::and_(V::srli16(ql1[i], 4), low4), V::and_(V::srli16(qh[i], 2), top2))};
        for (int k = 0; k < 4; ++k) p.q[8 * h + 2 * k + i / 4][i % 4] = q[k];
      }
    }
    // 16 signed 8-bit scales (see BlockQ6K).
    typename V::I w[4];
    for (int i = 0; i < 4; ++i) w[i] = s.u32(offsetof(BlockQ6K, scales) + 4 * i);
    // sc_pair[i]: -32 sc_2i and -32 sc_2i+1, the offset's factors (|.| <= 4096).
    const typename V::I minus32 = V::set1(-32);
    for (int i = 0; i < 8; ++i) {
      p.sc_pair[i] = pair16_of<V>(V::mullo(sbyte_of<V>(w, 2 * i), minus32),
                                  V::mullo(sbyte_of<V>(w, 2 * i + 1), minus32));
    }
    for (int j = 0; j < 16; ++j) p.sc[j] = V::scale_operand(sbyte_of<V>(w, j));
    p.d = s.f16_last(offsetof(BlockQ6K, d));
  }

  // 8 accumulators per (row, token), as llama.cpp's x86 ggml_vec_dot_q6_K_q8_K (ref
  // vec_dot_q6_K_q8_K): lane l of a block sums sc_j (q_j · x_j) over dword l % 4 of the
  // sub-blocks j of parity l / 4 (elements 4l..4l+3 of each 32-element group), less
  // 32 (sc_2l bsums_2l + sc_2l+1 bsums_2l+1); acc_l = fma(d dx, lane_l, acc_l).
  static constexpr int kAccs = 8;
  // One token at a time: its 8 accumulators and 4 lane sums fill the registers.
  static constexpr int kTokGroup = 1;

  static void block(const Packed& p, const Act& a, int64_t b, typename V::F* acc) {
    const BlockQ8K& x = a.blocks[b];
    const typename V::F d = V::fmul(p.d, V::fset1(x.d));
    // Lanes 0-3 (the even sub-blocks), then 4-7 (the odd): 4 integer sums live at a time, each
    // from its offset, at constant indices so that they stay in registers; the loop over the
    // sub-blocks stays a loop (unrolled, GCC computed every product first and spilled them).
    for (int parity = 0; parity < 2; ++parity) {
      typename V::I lane[4];
      for (int i = 0; i < 4; ++i) {
        const int l = 4 * parity + i;
        lane[i] = V::dot16(V::set1(0), p.sc_pair[l], V::bcast(x.bsums + 2 * l));
      }
#pragma GCC unroll 1
      for (int j = parity; j < 16; j += 2) {
        for (int i = 0; i < 4; ++i) {
          lane[i] = V::dot_scaled(lane[i], p.q[j][i], V::bcast(x.qs + 16 * j + 4 * i), p.sc[j]);
        }
      }
      for (int i = 0; i < 4; ++i) {
        acc[4 * parity + i] = V::fmadd(d, V::cvt(lane[i]), acc[4 * parity + i]);
      }
    }
  }

  // The result from the accumulators: llama.cpp's hsum_float_8 order.
  static typename V::F finish(const typename V::F* acc) {
    return hsum8<V>(acc);
  }
};

// ---- the tile loop shared by the kinds ----

// Kinds keep one float accumulator per (row, token) unless they declare kAccs (then block()
// updates kAccs of them and finish() combines them).
template <class K>
constexpr int accs_of() {
  if constexpr (requires { K::kAccs; }) {
    return K::kAccs;
  } else {
    return 1;
  }
}

// Tokens a tile runs together (their accumulators in registers): kTokGroup unless the kind
// names its own (K::kTokGroup).
template <class K>
constexpr bool kHasTokGroup = requires {
  K::kTokGroup;
};

template <class K>
constexpr int tok_group_of() {
  if constexpr (kHasTokGroup<K>) {
    return K::kTokGroup;
  } else {
    return kTokGroup;
  }
}

// Kinds that step T tokens through a block at once (K::block_tokens<T>).
template <class K>
constexpr bool kBlocksTokens = requires {
  K::kStarts;
  requires K::kStarts;
};

template <class V, class K>
void block_step(const typename K::Packed& p, const typename K::Act& a, int64_t b,
                typename V::F* acc) {
  if constexpr (requires { K::kAccs; }) {
    K::block(p, a, b, acc);
  } else {
    acc[0] = K::block(p, a, b, acc[0]);
  }
}

template <class V, class K>
typename V::F finish(const typename V::F* acc) {
  if constexpr (requires { K::kAccs; }) {
    return K::finish(acc);
  } else {
    return acc[0];
  }
}

// Steps T tokens' accumulators through blocks [b0, b0 + nbc).
template <class V, class K, int T>
inline void step_blocks(const typename K::Packed* packed, const typename K::Act* a, int64_t b0,
                        int64_t nbc, typename V::F (*acc)[accs_of<K>()]) {
  for (int64_t b = 0; b < nbc; ++b) {
    if constexpr (kBlocksTokens<K>) {
      K::template block_tokens<T>(packed[b], a, b0 + b, acc);
    } else {
      for (int t = 0; t < T; ++t) block_step<V, K>(packed[b], a[t], b0 + b, acc[t]);
    }
  }
}

// Runs blocks [b0, b0 + nbc) for T tokens, continuing from / saving to state. Flattened: the
// block steps must be inlined into this loop, and GCC's inliner stopped doing so for Q8_0's
// once the translation unit grew (an unrelated kind's new code left KindQ8_0::block out of line
// and Q8_0 prefill markedly slower).
template <class V, class K, int T>
[[gnu::flatten]] void run_tokens(const typename K::Packed* packed, int64_t b0, int64_t nbc,
                                 const uint8_t* act, size_t act_row_bytes, int64_t n_blocks,
                                 float* state /* [T][kAccs][kLanes] */) {
  constexpr int kAccs = accs_of<K>();
  typename K::Act a[T];
  typename V::F acc[T][kAccs];
  for (int t = 0; t < T; ++t) {
    a[t] = K::Act::of(act + t * act_row_bytes, n_blocks);
    for (int k = 0; k < kAccs; ++k) acc[t][k] = V::fload(state + V::kLanes * (t * kAccs + k));
  }
  step_blocks<V, K, T>(packed, a, b0, nbc, acc);
  for (int t = 0; t < T; ++t) {
    for (int k = 0; k < kAccs; ++k) V::fstore(state + V::kLanes * (t * kAccs + k), acc[t][k]);
  }
}

// T tokens' whole rows (one chunk of blocks) from zero in registers, finished into y: what
// run_tokens and the tile's state would compute, without the state's stores and loads.
template <class V, class K, int T>
[[gnu::flatten]] void run_whole(const typename K::Packed* packed, int64_t n_blocks,
                                const uint8_t* act, size_t act_row_bytes,
                                const typename V::Group& g, float* y, int64_t y_stride) {
  constexpr int kAccs = accs_of<K>();
  typename K::Act a[T];
  typename V::F acc[T][kAccs];
  for (int t = 0; t < T; ++t) {
    a[t] = K::Act::of(act + t * act_row_bytes, n_blocks);
    for (int k = 0; k < kAccs; ++k) acc[t][k] = V::fset1(0.0f);
  }
  step_blocks<V, K, T>(packed, a, 0, n_blocks, acc);
  for (int t = 0; t < T; ++t) V::store_rows(y + t * y_stride, finish<V, K>(acc[t]), g);
}

// Rows of at most this many values take tile_whole_rows: attention's q8_0 keys (a head, 64-512
// values). Weight rows (576 values and up in real models) keep the tile loop, which measured
// faster for them.
constexpr int64_t kWholeRowsMax = 512;

// The tile of rows that fit one chunk: each row group packed once for every token, the tokens'
// dots kept in registers (run_whole). The tile loop's state, zeroed, stored and loaded again per
// token and its row group packed again per kMaxTok tokens, cost these short rows as much as their
// dots.
template <class V, class K>
void tile_whole_rows(int64_t n_blocks, const uint8_t* w_bytes, size_t w_row_bytes, int64_t n_rows,
                     const uint8_t* a_bytes, size_t act_row_bytes, int64_t n_tok, float* y,
                     int64_t y_stride) {
  using RunFn = void (*)(const typename K::Packed*, int64_t, const uint8_t*, size_t,
                         const typename V::Group&, float*, int64_t);
  static constexpr RunFn kRun[kTokGroup] = {run_whole<V, K, 1>, run_whole<V, K, 2>,
                                            run_whole<V, K, 3>, run_whole<V, K, 4>};
  alignas(64) typename K::Packed packed[K::kChunk];
  for (int64_t r0 = 0; r0 < n_rows; r0 += V::kLanes) {
    const int64_t rows = n_rows - r0 < V::kLanes ? n_rows - r0 : V::kLanes;
    const typename V::Group g = V::make_group(w_bytes + r0 * w_row_bytes, w_row_bytes, rows);
    // The next row group's rows, in flight while this one is packed and used.
    const int64_t next_rows =
        n_rows - r0 - V::kLanes < V::kLanes ? n_rows - r0 - V::kLanes : V::kLanes;
    const uint8_t* next = w_bytes + (r0 + V::kLanes) * w_row_bytes;
    for (int64_t r = 0; r < next_rows; ++r) {
      for (size_t off = 0; off < w_row_bytes; off += 64) V::prefetch(next + r * w_row_bytes + off);
    }
    for (int64_t b = 0; b < n_blocks; ++b) K::pack(g, b, packed[b]);
    for (int64_t t = 0; t < n_tok; t += tok_group_of<K>()) {
      const int64_t ng = n_tok - t < tok_group_of<K>() ? n_tok - t : tok_group_of<K>();
      kRun[ng - 1](packed, n_blocks, a_bytes + t * act_row_bytes, act_row_bytes, g,
                   y + t * y_stride + r0, y_stride);
    }
  }
}

// MatmulTileFn (kernel_table.h) for kind K on vector policy V.
template <class V, class K>
void tile(int64_t n_in, const void* w, size_t w_row_bytes, int64_t n_rows, const void* act,
          size_t act_row_bytes, int64_t n_tok, float* y, int64_t y_stride) {
  using RunFn = void (*)(const typename K::Packed*, int64_t, int64_t, const uint8_t*, size_t,
                         int64_t, float*);
  static constexpr RunFn kRun[kTokGroup] = {run_tokens<V, K, 1>, run_tokens<V, K, 2>,
                                            run_tokens<V, K, 3>, run_tokens<V, K, 4>};
  constexpr int kAccs = accs_of<K>();
  const int64_t n_blocks = n_in / K::kBlock;
  const size_t block_bytes = n_blocks > 0 ? w_row_bytes / static_cast<size_t>(n_blocks) : 0;
  const auto* w_bytes = static_cast<const uint8_t*>(w);
  const auto* a_bytes = static_cast<const uint8_t*>(act);
  if (n_blocks > 0 && n_in <= kWholeRowsMax && n_blocks <= K::kChunk) {
    tile_whole_rows<V, K>(n_blocks, w_bytes, w_row_bytes, n_rows, a_bytes, act_row_bytes, n_tok, y,
                          y_stride);
    return;
  }
  alignas(64) typename K::Packed packed[K::kChunk];
  alignas(64) float state[kMaxTok][kAccs][V::kLanes];
  for (int64_t r0 = 0; r0 < n_rows; r0 += V::kLanes) {
    const int64_t rows = n_rows - r0 < V::kLanes ? n_rows - r0 : V::kLanes;
    const typename V::Group g = V::make_group(w_bytes + r0 * w_row_bytes, w_row_bytes, rows);
    for (int64_t t0 = 0; t0 < n_tok; t0 += kMaxTok) {
      const int64_t nt = n_tok - t0 < kMaxTok ? n_tok - t0 : kMaxTok;
      for (int64_t t = 0; t < nt; ++t) {
        for (int k = 0; k < kAccs; ++k) V::fstore(state[t][k], V::fset1(0.0f));
      }
      for (int64_t b0 = 0; b0 < n_blocks; b0 += K::kChunk) {
        const int64_t nbc = n_blocks - b0 < K::kChunk ? n_blocks - b0 : K::kChunk;
        // Ask for the next chunk of every row now: 16 row streams are more than the hardware
        // prefetchers follow, and the pack below is short.
        if (b0 + K::kChunk < n_blocks) {
          const int64_t next_end = b0 + 2 * K::kChunk < n_blocks ? b0 + 2 * K::kChunk : n_blocks;
          const size_t begin = static_cast<size_t>(b0 + K::kChunk) * block_bytes;
          const size_t end = static_cast<size_t>(next_end) * block_bytes;
          for (int r = 0; r < V::kLanes; ++r) {
            for (size_t off = begin; off < end; off += 64) V::prefetch(g.row[r] + off);
          }
        }
        // And the same chunk of the next row group: rows are short (a 1024-wide Q6_K row is 840
        // bytes, one chunk), so without this nothing is in flight while the last chunk of a
        // group is packed and used.
        if (t0 == 0 && r0 + V::kLanes < n_rows) {
          const int64_t next_rows =
              n_rows - r0 - V::kLanes < V::kLanes ? n_rows - r0 - V::kLanes : V::kLanes;
          const size_t begin = static_cast<size_t>(b0) * block_bytes;
          const size_t end = static_cast<size_t>(b0 + nbc) * block_bytes;
          const uint8_t* next = w_bytes + (r0 + V::kLanes) * w_row_bytes;
          for (int64_t r = 0; r < next_rows; ++r) {
            for (size_t off = begin; off < end; off += 64)
              V::prefetch(next + r * w_row_bytes + off);
          }
        }
        for (int64_t b = 0; b < nbc; ++b) K::pack(g, b0 + b, packed[b]);
        for (int64_t t = 0; t < nt; t += tok_group_of<K>()) {
          const int64_t ng = nt - t < tok_group_of<K>() ? nt - t : tok_group_of<K>();
          kRun[ng - 1](packed, b0, nbc, a_bytes + (t0 + t) * act_row_bytes, act_row_bytes, n_blocks,
                       state[t][0]);
        }
      }
      for (int64_t t = 0; t < nt; ++t) {
        typename V::F acc[kAccs];
        for (int k = 0; k < kAccs; ++k) acc[k] = V::fload(state[t][k]);
        V::store_rows(y + (t0 + t) * y_stride + r0, finish<V, K>(acc), g);
      }
    }
  }
}

}  // namespace
}  // namespace minfer::kernels::quant_tile
