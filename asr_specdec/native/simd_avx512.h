/* The SIMD layer on x86-64 AVX-512 (F, BW, VL, VNNI, BF16): one native register per vector of 16 lanes. See
   simd.h for what each function means; every build implements the same names with the same per-lane results. */
#ifndef ASR_SPECDEC_SIMD_AVX512_H
#define ASR_SPECDEC_SIMD_AVX512_H

#include <immintrin.h>

#define SIMD_ISA "avx512"
#define TILE_PASS 4     /* column vectors of a 64-wide tile accumulated together: 32 registers hold 6 rows x 4 */
#define SCORE_CHUNKS 4  /* key chunks scored together per query block */
#define WEIGH_VECTORS 8 /* head vectors weighed together per query block */
#define QUERY_BLOCK 8   /* a verification's queries of one head together: its keys and values widened once */
#define SUM_REGISTERS 24 /* of 32: the rest hold the keys or values and a broadcast query element */
#define INT8_DOT_BIAS 128 /* vpdpbusd multiplies the stored w + 128: sums carry 128 * sum(x) */

typedef __m512 vf;
typedef __m512i vi;
typedef __m512i vb;
typedef __mmask16 vmask;

#define SIMD_INLINE static inline __attribute__((always_inline))

SIMD_INLINE vf vf_zero(void) { return _mm512_setzero_ps(); }
SIMD_INLINE vf vf_set1(float value) { return _mm512_set1_ps(value); }
SIMD_INLINE vf vf_load(const float *p) { return _mm512_loadu_ps(p); }
SIMD_INLINE void vf_store(float *p, vf v) { _mm512_storeu_ps(p, v); }
SIMD_INLINE vmask vmask_tail(int valid) {
    return valid >= 16 ? (__mmask16)0xffff : valid <= 0 ? (__mmask16)0 : (__mmask16)((1u << valid) - 1u);
}
SIMD_INLINE vf vf_load_tail(const float *p, int valid) { return _mm512_maskz_loadu_ps(vmask_tail(valid), p); }
SIMD_INLINE void vf_store_tail(float *p, int valid, vf v) { _mm512_mask_storeu_ps(p, vmask_tail(valid), v); }
SIMD_INLINE vf vf_add(vf a, vf b) { return _mm512_add_ps(a, b); }
SIMD_INLINE vf vf_sub(vf a, vf b) { return _mm512_sub_ps(a, b); }
SIMD_INLINE vf vf_mul(vf a, vf b) { return _mm512_mul_ps(a, b); }
SIMD_INLINE vf vf_div(vf a, vf b) { return _mm512_div_ps(a, b); }
SIMD_INLINE vf vf_max(vf a, vf b) { return _mm512_max_ps(a, b); }
SIMD_INLINE vf vf_min(vf a, vf b) { return _mm512_min_ps(a, b); }
SIMD_INLINE vf vf_abs(vf a) { return _mm512_abs_ps(a); }
SIMD_INLINE vf vf_fma(vf a, vf b, vf c) { return _mm512_fmadd_ps(a, b, c); }   /* a * b + c, one rounding */
SIMD_INLINE vf vf_fnma(vf a, vf b, vf c) { return _mm512_fnmadd_ps(a, b, c); } /* c - a * b, one rounding */
SIMD_INLINE float vf_reduce_add(vf v) { return _mm512_reduce_add_ps(v); }
SIMD_INLINE float vf_reduce_max(vf v) { return _mm512_reduce_max_ps(v); }
SIMD_INLINE vf vf_round(vf v) { return _mm512_roundscale_ps(v, _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC); }
SIMD_INLINE vf vf_scale2(vf p, vf n) { return _mm512_scalef_ps(p, n); } /* p * 2^n, n integral */
SIMD_INLINE vmask vf_lt(vf a, vf b) { return _mm512_cmp_ps_mask(a, b, _CMP_LT_OQ); }
SIMD_INLINE vmask vf_ge(vf a, vf b) { return _mm512_cmp_ps_mask(a, b, _CMP_GE_OQ); }
SIMD_INLINE vmask vf_gt(vf a, vf b) { return _mm512_cmp_ps_mask(a, b, _CMP_GT_OQ); }
SIMD_INLINE vmask vmask_and(vmask a, vmask b) { return a & b; }
SIMD_INLINE uint32_t vmask_bits(vmask m) { return m; }
SIMD_INLINE vf vf_blend(vmask m, vf if_false, vf if_true) { return _mm512_mask_blend_ps(m, if_false, if_true); }
SIMD_INLINE vf vf_max_tail(vf best, vf v, int valid) { return _mm512_mask_max_ps(best, vmask_tail(valid), best, v); }
SIMD_INLINE vf vf_zero_tail(vf v, int valid) { return _mm512_maskz_mov_ps(vmask_tail(valid), v); }
SIMD_INLINE vf vf_with_sign_of(vf magnitude, vf x) {
    return _mm512_castsi512_ps(_mm512_or_si512(_mm512_castps_si512(magnitude),
                                               _mm512_and_si512(_mm512_castps_si512(x), _mm512_set1_epi32((int)0x80000000u))));
}

/* storage formats */
SIMD_INLINE vf vf_load_f16(const uint16_t *p) { return _mm512_cvtph_ps(_mm256_loadu_si256((const __m256i *)p)); }
SIMD_INLINE vf vf_load_bf16(const uint16_t *p) {
    return _mm512_castsi512_ps(_mm512_slli_epi32(_mm512_cvtepu16_epi32(_mm256_loadu_si256((const __m256i *)p)), 16));
}
SIMD_INLINE vf vf_load_i8(const int8_t *p) { return _mm512_cvtepi32_ps(_mm512_cvtepi8_epi32(_mm_loadu_si128((const __m128i *)p))); }
SIMD_INLINE float f16_to_float(uint16_t bits) { return _cvtsh_ss(bits); }
/* 16 bfloat16 values, rounded to nearest even as vcvtneps2bf16 does (denormals to zero, NaN kept quiet) */
SIMD_INLINE void vf_store_bf16(uint16_t *p, vf v) { _mm256_storeu_si256((__m256i *)p, (__m256i)_mm512_cvtneps_pbh(v)); }
/* the first `valid` values as bfloat16, rounded to nearest even by integer arithmetic (no NaN expected) */
SIMD_INLINE void vf_store_bf16_tail(uint16_t *p, int valid, vf v) {
    __m512i bits = _mm512_castps_si512(v);
    __m512i lsb = _mm512_and_si512(_mm512_srli_epi32(bits, 16), _mm512_set1_epi32(1));
    bits = _mm512_add_epi32(bits, _mm512_add_epi32(_mm512_set1_epi32(0x7fff), lsb));
    _mm256_mask_storeu_epi16(p, vmask_tail(valid), _mm512_cvtepi32_epi16(_mm512_srli_epi32(bits, 16)));
}

/* 16 int32 lanes */
SIMD_INLINE vi vi_zero(void) { return _mm512_setzero_si512(); }
SIMD_INLINE vi vi_set1(int32_t value) { return _mm512_set1_epi32(value); }
SIMD_INLINE vi vi_load(const void *p) { return _mm512_loadu_si512(p); }
SIMD_INLINE vi vi_add(vi a, vi b) { return _mm512_add_epi32(a, b); }
SIMD_INLINE vi vi_sub(vi a, vi b) { return _mm512_sub_epi32(a, b); }
SIMD_INLINE vi vi_min(vi a, vi b) { return _mm512_min_epi32(a, b); }
SIMD_INLINE vi vi_max(vi a, vi b) { return _mm512_max_epi32(a, b); }
SIMD_INLINE vi vi_and(vi a, vi b) { return _mm512_and_si512(a, b); }
SIMD_INLINE vi vi_srl(vi a, int count) { return _mm512_srli_epi32(a, count); }
SIMD_INLINE vi vi_sll(vi a, int count) { return _mm512_slli_epi32(a, count); }
SIMD_INLINE vi vi_or(vi a, vi b) { return _mm512_or_si512(a, b); }
SIMD_INLINE void vi_store(void *p, vi v) { _mm512_storeu_si512(p, v); }
SIMD_INLINE int32_t vi_reduce_add(vi v) { return _mm512_reduce_add_epi32(v); }
SIMD_INLINE vf vf_from_vi(vi v) { return _mm512_cvtepi32_ps(v); }
SIMD_INLINE vi vi_round(vf v) { return _mm512_cvtps_epi32(v); } /* to nearest even */
SIMD_INLINE void vi_store_i16(int16_t *p, vi v) { _mm256_storeu_si256((__m256i *)p, _mm512_cvtepi32_epi16(v)); }
SIMD_INLINE void vi_store_i8(int8_t *p, vi v) { _mm_storeu_si128((__m128i *)p, _mm512_cvtepi32_epi8(v)); }

/* 64 bytes: 16 lanes of 4 */
SIMD_INLINE vb vb_load(const void *p) { return _mm512_loadu_si512(p); }
SIMD_INLINE vb vb_set1_i32(int32_t four) { return _mm512_set1_epi32(four); }
SIMD_INLINE vb vb_low_nibbles(vb v) { return _mm512_and_si512(v, _mm512_set1_epi8(0x0f)); }
SIMD_INLINE vb vb_high_nibbles(vb v) { return _mm512_and_si512(_mm512_srli_epi16(v, 4), _mm512_set1_epi8(0x0f)); }
/* acc + per lane sum of 4 products w * x (w stored + 128, x int8 in -127..127) + INT8_DOT_BIAS * sum of the 4 x.
   The dot products below are written as the instruction itself, not the intrinsic: with the intrinsic GCC 12 kept
   each accumulator in a register that vpdpbusd did not write, moved it in and out around every instruction, and
   spilled and reloaded weights inside the int8 encoder's product loop (a large-v3 encoder window on a Zen 4:
   4.27 -> 3.9 s, the same integers). */
SIMD_INLINE vi vi_dot_weights(vi acc, vb biased, vb x) {
    __asm__("vpdpbusd %2, %1, %0" : "+v"(acc) : "v"(biased), "v"(x));
    return acc;
}
/* acc + per lane sum of 2 products of int16 pairs (vpdpwssd, as the instruction for the reason above) */
SIMD_INLINE vi vi_dot_pairs(vi acc, vb a, vb b) {
    __asm__("vpdpwssd %2, %1, %0" : "+v"(acc) : "v"(a), "v"(b));
    return acc;
}
/* 16 lanes of the int16 pair (first[l], second[l]) from 16 int8 values each */
SIMD_INLINE vb vb_pairs_i8(const int8_t *first, const int8_t *second) {
    __m128i a = _mm_loadu_si128((const __m128i *)first), b = _mm_loadu_si128((const __m128i *)second);
    return _mm512_cvtepi8_epi16(_mm256_set_m128i(_mm_unpackhi_epi8(a, b), _mm_unpacklo_epi8(a, b)));
}
/* acc + per lane sum of 4 products u * x, u in 0..15 */
SIMD_INLINE vi vi_dot_nibbles(vi acc, vb u, vb x) { return vi_dot_weights(acc, u, x); }
/* acc + a_odd * b_odd, then + a_even * b_even, per lane of two bfloat16 values (vdpbf16ps) */
SIMD_INLINE vf vf_dot_bf16(vf acc, vb a, vb b) {
    __asm__("vdpbf16ps %2, %1, %0" : "+v"(acc) : "v"(a), "v"(b));
    return acc;
}

#endif
