/* The SIMD layer on x86-64 AVX2 + FMA + F16C (AVX-VNNI where compiled with -mavxvnni): a vector of 16 lanes is two
   256-bit registers. Built without any AVX-512 flag, so nothing here can use AVX-512 instructions. Reductions
   follow the tree of GCC's _mm512_reduce_add_ps, so sums come out as the AVX-512 build's. */
#ifndef ASR_SPECDEC_SIMD_AVX2_H
#define ASR_SPECDEC_SIMD_AVX2_H

#include <immintrin.h>

#define SIMD_ISA "avx2"
#define TILE_PASS 1     /* 16 registers: 6 rows x 1 column vector (2 registers each) + the weights */
#define SCORE_CHUNKS 1
#define WEIGH_VECTORS 2
#if defined(__AVXVNNI__) || defined(ASR_SPECDEC_EVEX_VNNI)
#define INT8_DOT_BIAS 128 /* vpdpbusd multiplies the stored w + 128 */
#else
#define INT8_DOT_BIAS 0 /* the sign trick multiplies w itself */
#endif

typedef struct { __m256 v[2]; } vf;
typedef struct { __m256i v[2]; } vi;
typedef struct { __m256i v[2]; } vb;
typedef struct { __m256 v[2]; } vmask;

#define SIMD_INLINE static inline __attribute__((always_inline))
#define EACH2(type, expression) do { for (int i = 0; i < 2; i++) result.v[i] = (expression); } while (0)

SIMD_INLINE vf vf_zero(void) { vf result; EACH2(vf, _mm256_setzero_ps()); return result; }
SIMD_INLINE vf vf_set1(float value) { vf result; EACH2(vf, _mm256_set1_ps(value)); return result; }
SIMD_INLINE vf vf_load(const float *p) { vf result; EACH2(vf, _mm256_loadu_ps(p + 8 * i)); return result; }
SIMD_INLINE void vf_store(float *p, vf v) { _mm256_storeu_ps(p, v.v[0]); _mm256_storeu_ps(p + 8, v.v[1]); }
SIMD_INLINE vmask vmask_tail(int valid) {
    const __m256i lanes = _mm256_setr_epi32(0, 1, 2, 3, 4, 5, 6, 7);
    vmask result;
    EACH2(vmask, _mm256_castsi256_ps(_mm256_cmpgt_epi32(_mm256_set1_epi32(valid - 8 * i), lanes)));
    return result;
}
SIMD_INLINE vf vf_load_tail(const float *p, int valid) {
    if (valid >= 16) return vf_load(p);
    vmask m = vmask_tail(valid);
    vf result;
    EACH2(vf, _mm256_maskload_ps(p + 8 * i, _mm256_castps_si256(m.v[i])));
    return result;
}
SIMD_INLINE void vf_store_tail(float *p, int valid, vf v) {
    if (valid >= 16) {
        vf_store(p, v);
        return;
    }
    vmask m = vmask_tail(valid);
    for (int i = 0; i < 2; i++) _mm256_maskstore_ps(p + 8 * i, _mm256_castps_si256(m.v[i]), v.v[i]);
}
SIMD_INLINE vf vf_add(vf a, vf b) { vf result; EACH2(vf, _mm256_add_ps(a.v[i], b.v[i])); return result; }
SIMD_INLINE vf vf_sub(vf a, vf b) { vf result; EACH2(vf, _mm256_sub_ps(a.v[i], b.v[i])); return result; }
SIMD_INLINE vf vf_mul(vf a, vf b) { vf result; EACH2(vf, _mm256_mul_ps(a.v[i], b.v[i])); return result; }
SIMD_INLINE vf vf_div(vf a, vf b) { vf result; EACH2(vf, _mm256_div_ps(a.v[i], b.v[i])); return result; }
SIMD_INLINE vf vf_max(vf a, vf b) { vf result; EACH2(vf, _mm256_max_ps(a.v[i], b.v[i])); return result; }
SIMD_INLINE vf vf_min(vf a, vf b) { vf result; EACH2(vf, _mm256_min_ps(a.v[i], b.v[i])); return result; }
SIMD_INLINE vf vf_abs(vf a) {
    vf result;
    EACH2(vf, _mm256_and_ps(a.v[i], _mm256_castsi256_ps(_mm256_set1_epi32(0x7fffffff))));
    return result;
}
SIMD_INLINE vf vf_fma(vf a, vf b, vf c) { vf result; EACH2(vf, _mm256_fmadd_ps(a.v[i], b.v[i], c.v[i])); return result; }
SIMD_INLINE vf vf_fnma(vf a, vf b, vf c) { vf result; EACH2(vf, _mm256_fnmadd_ps(a.v[i], b.v[i], c.v[i])); return result; }
SIMD_INLINE float vf_reduce_add(vf v) { /* (hi256 + lo256), (hi128 + lo128), then lanes {0,1} + {2,3}, then 0 + 1 */
    __m256 eight = _mm256_add_ps(v.v[1], v.v[0]);
    __m128 four = _mm_add_ps(_mm256_extractf128_ps(eight, 1), _mm256_castps256_ps128(eight));
    __m128 two = _mm_add_ps(four, _mm_shuffle_ps(four, four, _MM_SHUFFLE(1, 0, 3, 2)));
    return _mm_cvtss_f32(two) + _mm_cvtss_f32(_mm_shuffle_ps(two, two, _MM_SHUFFLE(0, 1, 0, 1)));
}
SIMD_INLINE float vf_reduce_max(vf v) {
    __m256 eight = _mm256_max_ps(v.v[1], v.v[0]);
    __m128 four = _mm_max_ps(_mm256_extractf128_ps(eight, 1), _mm256_castps256_ps128(eight));
    __m128 two = _mm_max_ps(four, _mm_shuffle_ps(four, four, _MM_SHUFFLE(1, 0, 3, 2)));
    __m128 one = _mm_max_ps(two, _mm_shuffle_ps(two, two, _MM_SHUFFLE(0, 1, 0, 1)));
    return _mm_cvtss_f32(one);
}
SIMD_INLINE vf vf_round(vf v) {
    vf result;
    EACH2(vf, _mm256_round_ps(v.v[i], _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC));
    return result;
}
/* p * 2^n for integral n in -252..254, one rounding as vscalefps: two exact powers of two, the first product exact */
SIMD_INLINE vf vf_scale2(vf p, vf n) {
    vf result;
    for (int i = 0; i < 2; i++) {
        __m256i whole = _mm256_cvtps_epi32(n.v[i]);
        __m256i half = _mm256_srai_epi32(whole, 1), rest = _mm256_sub_epi32(whole, half);
        __m256 first = _mm256_castsi256_ps(_mm256_slli_epi32(_mm256_add_epi32(half, _mm256_set1_epi32(127)), 23));
        __m256 second = _mm256_castsi256_ps(_mm256_slli_epi32(_mm256_add_epi32(rest, _mm256_set1_epi32(127)), 23));
        result.v[i] = _mm256_mul_ps(_mm256_mul_ps(p.v[i], first), second);
    }
    return result;
}
SIMD_INLINE vmask vf_lt(vf a, vf b) { vmask result; EACH2(vmask, _mm256_cmp_ps(a.v[i], b.v[i], _CMP_LT_OQ)); return result; }
SIMD_INLINE vmask vf_ge(vf a, vf b) { vmask result; EACH2(vmask, _mm256_cmp_ps(a.v[i], b.v[i], _CMP_GE_OQ)); return result; }
SIMD_INLINE vmask vf_gt(vf a, vf b) { vmask result; EACH2(vmask, _mm256_cmp_ps(a.v[i], b.v[i], _CMP_GT_OQ)); return result; }
SIMD_INLINE vmask vmask_and(vmask a, vmask b) { vmask result; EACH2(vmask, _mm256_and_ps(a.v[i], b.v[i])); return result; }
SIMD_INLINE uint32_t vmask_bits(vmask m) {
    return (uint32_t)_mm256_movemask_ps(m.v[0]) | (uint32_t)_mm256_movemask_ps(m.v[1]) << 8;
}
SIMD_INLINE vf vf_blend(vmask m, vf if_false, vf if_true) {
    vf result;
    EACH2(vf, _mm256_blendv_ps(if_false.v[i], if_true.v[i], m.v[i]));
    return result;
}
SIMD_INLINE vf vf_max_tail(vf best, vf v, int valid) { return vf_blend(vmask_tail(valid), best, vf_max(best, v)); }
SIMD_INLINE vf vf_zero_tail(vf v, int valid) {
    vmask m = vmask_tail(valid);
    vf result;
    EACH2(vf, _mm256_and_ps(v.v[i], m.v[i]));
    return result;
}
SIMD_INLINE vf vf_with_sign_of(vf magnitude, vf x) {
    const __m256 sign = _mm256_castsi256_ps(_mm256_set1_epi32((int)0x80000000u));
    vf result;
    EACH2(vf, _mm256_or_ps(magnitude.v[i], _mm256_and_ps(x.v[i], sign)));
    return result;
}

/* storage formats */
SIMD_INLINE vf vf_load_f16(const uint16_t *p) {
    vf result;
    EACH2(vf, _mm256_cvtph_ps(_mm_loadu_si128((const __m128i *)(p + 8 * i))));
    return result;
}
SIMD_INLINE vf vf_load_bf16(const uint16_t *p) {
    vf result;
    EACH2(vf, _mm256_castsi256_ps(_mm256_slli_epi32(_mm256_cvtepu16_epi32(_mm_loadu_si128((const __m128i *)(p + 8 * i))), 16)));
    return result;
}
SIMD_INLINE vf vf_load_i8(const int8_t *p) {
    __m128i bytes = _mm_loadu_si128((const __m128i *)p);
    vf result;
    result.v[0] = _mm256_cvtepi32_ps(_mm256_cvtepi8_epi32(bytes));
    result.v[1] = _mm256_cvtepi32_ps(_mm256_cvtepi8_epi32(_mm_unpackhi_epi64(bytes, bytes)));
    return result;
}
SIMD_INLINE float f16_to_float(uint16_t bits) { return _cvtsh_ss(bits); }
SIMD_INLINE __m256i bf16_halves(__m256i bits) { /* in each 32-bit lane: the bfloat16 rounding to nearest even */
    __m256i lsb = _mm256_and_si256(_mm256_srli_epi32(bits, 16), _mm256_set1_epi32(1));
    return _mm256_srli_epi32(_mm256_add_epi32(bits, _mm256_add_epi32(_mm256_set1_epi32(0x7fff), lsb)), 16);
}
SIMD_INLINE void store_halves(uint16_t *p, __m256i low, __m256i high) {
    _mm256_storeu_si256((__m256i *)p, _mm256_permute4x64_epi64(_mm256_packus_epi32(low, high), 0xD8));
}
SIMD_INLINE void vf_store_bf16(uint16_t *p, vf v) { /* as vcvtneps2bf16: denormals to signed zero, NaN quiet */
    __m256i halves[2];
    for (int i = 0; i < 2; i++) {
        __m256i bits = _mm256_castps_si256(v.v[i]);
        __m256i exponent = _mm256_and_si256(bits, _mm256_set1_epi32(0x7f800000));
        __m256i magnitude = _mm256_and_si256(bits, _mm256_set1_epi32(0x7fffffff));
        __m256i tiny = _mm256_cmpeq_epi32(exponent, _mm256_setzero_si256());
        __m256i nan = _mm256_cmpgt_epi32(magnitude, _mm256_set1_epi32(0x7f800000));
        __m256i rounded = bf16_halves(_mm256_andnot_si256(tiny, bits));
        rounded = _mm256_or_si256(rounded, _mm256_and_si256(tiny, _mm256_and_si256(_mm256_srli_epi32(bits, 16), _mm256_set1_epi32(0x8000))));
        __m256i quiet = _mm256_or_si256(_mm256_srli_epi32(bits, 16), _mm256_set1_epi32(0x40));
        halves[i] = _mm256_blendv_epi8(rounded, quiet, nan);
    }
    store_halves(p, halves[0], halves[1]);
}
SIMD_INLINE void vf_store_bf16_tail(uint16_t *p, int valid, vf v) {
    uint16_t all[16];
    store_halves(all, bf16_halves(_mm256_castps_si256(v.v[0])), bf16_halves(_mm256_castps_si256(v.v[1])));
    memcpy(p, all, (size_t)(valid < 16 ? valid : 16) * 2);
}

/* 16 int32 lanes */
SIMD_INLINE vi vi_zero(void) { vi result; EACH2(vi, _mm256_setzero_si256()); return result; }
SIMD_INLINE vi vi_set1(int32_t value) { vi result; EACH2(vi, _mm256_set1_epi32(value)); return result; }
SIMD_INLINE vi vi_load(const void *p) {
    vi result;
    EACH2(vi, _mm256_loadu_si256((const __m256i *)((const char *)p + 32 * i)));
    return result;
}
SIMD_INLINE vi vi_add(vi a, vi b) { vi result; EACH2(vi, _mm256_add_epi32(a.v[i], b.v[i])); return result; }
SIMD_INLINE vi vi_sub(vi a, vi b) { vi result; EACH2(vi, _mm256_sub_epi32(a.v[i], b.v[i])); return result; }
SIMD_INLINE vi vi_min(vi a, vi b) { vi result; EACH2(vi, _mm256_min_epi32(a.v[i], b.v[i])); return result; }
SIMD_INLINE vi vi_max(vi a, vi b) { vi result; EACH2(vi, _mm256_max_epi32(a.v[i], b.v[i])); return result; }
SIMD_INLINE vi vi_and(vi a, vi b) { vi result; EACH2(vi, _mm256_and_si256(a.v[i], b.v[i])); return result; }
SIMD_INLINE vi vi_srl(vi a, int count) {
    vi result;
    EACH2(vi, _mm256_srl_epi32(a.v[i], _mm_cvtsi32_si128(count)));
    return result;
}
SIMD_INLINE vi vi_sll(vi a, int count) {
    vi result;
    EACH2(vi, _mm256_sll_epi32(a.v[i], _mm_cvtsi32_si128(count)));
    return result;
}
SIMD_INLINE vi vi_or(vi a, vi b) { vi result; EACH2(vi, _mm256_or_si256(a.v[i], b.v[i])); return result; }
SIMD_INLINE void vi_store(void *p, vi v) {
    _mm256_storeu_si256((__m256i *)p, v.v[0]);
    _mm256_storeu_si256((__m256i *)p + 1, v.v[1]);
}
SIMD_INLINE int32_t vi_reduce_add(vi v) {
    __m256i eight = _mm256_add_epi32(v.v[0], v.v[1]);
    __m128i four = _mm_add_epi32(_mm256_extracti128_si256(eight, 1), _mm256_castsi256_si128(eight));
    four = _mm_add_epi32(four, _mm_shuffle_epi32(four, _MM_SHUFFLE(1, 0, 3, 2)));
    four = _mm_add_epi32(four, _mm_shuffle_epi32(four, _MM_SHUFFLE(0, 1, 0, 1)));
    return _mm_cvtsi128_si32(four);
}
SIMD_INLINE vf vf_from_vi(vi v) { vf result; EACH2(vf, _mm256_cvtepi32_ps(v.v[i])); return result; }
SIMD_INLINE vi vi_round(vf v) { vi result; EACH2(vi, _mm256_cvtps_epi32(v.v[i])); return result; }
SIMD_INLINE void vi_store_i16(int16_t *p, vi v) { /* values in -32768..32767 */
    _mm256_storeu_si256((__m256i *)p, _mm256_permute4x64_epi64(_mm256_packs_epi32(v.v[0], v.v[1]), 0xD8));
}
SIMD_INLINE void vi_store_i8(int8_t *p, vi v) { /* values in -128..127 */
    __m256i words = _mm256_permute4x64_epi64(_mm256_packs_epi32(v.v[0], v.v[1]), 0xD8);
    _mm_storeu_si128((__m128i *)p, _mm_packs_epi16(_mm256_castsi256_si128(words), _mm256_extracti128_si256(words, 1)));
}

/* 64 bytes: 16 lanes of 4 */
SIMD_INLINE vb vb_load(const void *p) {
    vb result;
    EACH2(vb, _mm256_loadu_si256((const __m256i *)((const char *)p + 32 * i)));
    return result;
}
SIMD_INLINE vb vb_set1_i32(int32_t four) { vb result; EACH2(vb, _mm256_set1_epi32(four)); return result; }
SIMD_INLINE vb vb_low_nibbles(vb v) { vb result; EACH2(vb, _mm256_and_si256(v.v[i], _mm256_set1_epi8(0x0f))); return result; }
SIMD_INLINE vb vb_high_nibbles(vb v) {
    vb result;
    EACH2(vb, _mm256_and_si256(_mm256_srli_epi16(v.v[i], 4), _mm256_set1_epi8(0x0f)));
    return result;
}
#if defined(__AVXVNNI__) || defined(ASR_SPECDEC_EVEX_VNNI)
/* acc + per lane sum of 4 products u8 x s8 (vpdpbusd on ymm). ASR_SPECDEC_EVEX_VNNI (backend.py: only to measure an
   AVX-VNNI CPU on an AVX-512 one, whose CPU may lack AVX-VNNI's VEX form) writes the same instruction in its
   AVX512-VNNI (EVEX) encoding on ymm0-15: the same operation and throughput class, the one AVX-512 instruction in
   such a build. */
SIMD_INLINE __m256i dpbusd256(__m256i acc, __m256i u, __m256i s) {
#ifdef __AVXVNNI__
    return _mm256_dpbusd_avx_epi32(acc, u, s);
#else
    __asm__("%{evex%} vpdpbusd %2, %1, %0" : "+x"(acc) : "x"(u), "x"(s));
    return acc;
#endif
}
SIMD_INLINE vi vi_dot_weights(vi acc, vb biased, vb x) {
    vi result;
    EACH2(vi, dpbusd256(acc.v[i], biased.v[i], x.v[i]));
    return result;
}
SIMD_INLINE vi vi_dot_nibbles(vi acc, vb u, vb x) {
    vi result;
    EACH2(vi, dpbusd256(acc.v[i], u.v[i], x.v[i]));
    return result;
}
#else
/* Without VNNI, vpmaddubsw adds two u8 x s8 products in int16 with saturation: (w + 128) * x pairs would overflow.
   The sign trick moves x's sign onto w: |x| (0..127) times w * sign(x) (-127..127), so a pair is at most
   2 * 127 * 127 = 32258 in size, exact; vpmaddwd then adds the pairs of pairs into int32. */
SIMD_INLINE vi vi_dot_weights(vi acc, vb biased, vb x) {
    const __m256i flip = _mm256_set1_epi8((char)0x80), ones = _mm256_set1_epi16(1);
    vi result;
    for (int i = 0; i < 2; i++) {
        __m256i w = _mm256_xor_si256(biased.v[i], flip);
        __m256i pairs = _mm256_maddubs_epi16(_mm256_sign_epi8(x.v[i], x.v[i]), _mm256_sign_epi8(w, x.v[i]));
        result.v[i] = _mm256_add_epi32(acc.v[i], _mm256_madd_epi16(pairs, ones));
    }
    return result;
}
/* u in 0..15: a pair is at most 2 * 15 * 127 in size, no saturation */
SIMD_INLINE vi vi_dot_nibbles(vi acc, vb u, vb x) {
    const __m256i ones = _mm256_set1_epi16(1);
    vi result;
    EACH2(vi, _mm256_add_epi32(acc.v[i], _mm256_madd_epi16(_mm256_maddubs_epi16(u.v[i], x.v[i]), ones)));
    return result;
}
#endif
/* acc + per lane sum of 2 products of int16 pairs (vpmaddwd then an add: the same integers as vpdpwssd) */
SIMD_INLINE vi vi_dot_pairs(vi acc, vb a, vb b) {
    vi result;
    EACH2(vi, _mm256_add_epi32(acc.v[i], _mm256_madd_epi16(a.v[i], b.v[i])));
    return result;
}
/* 16 lanes of the int16 pair (first[l], second[l]) from 16 int8 values each */
SIMD_INLINE vb vb_pairs_i8(const int8_t *first, const int8_t *second) {
    __m128i a = _mm_loadu_si128((const __m128i *)first), b = _mm_loadu_si128((const __m128i *)second);
    vb result;
    result.v[0] = _mm256_cvtepi8_epi16(_mm_unpacklo_epi8(a, b));
    result.v[1] = _mm256_cvtepi8_epi16(_mm_unpackhi_epi8(a, b));
    return result;
}
/* acc + a_odd * b_odd, then + a_even * b_even (vdpbf16ps's order; the products of bfloat16 values are exact) */
SIMD_INLINE vf vf_dot_bf16(vf acc, vb a, vb b) {
    const __m256i high = _mm256_set1_epi32((int)0xffff0000u);
    vf result;
    for (int i = 0; i < 2; i++) {
        __m256 odd = _mm256_fmadd_ps(_mm256_castsi256_ps(_mm256_and_si256(a.v[i], high)),
                                     _mm256_castsi256_ps(_mm256_and_si256(b.v[i], high)), acc.v[i]);
        result.v[i] = _mm256_fmadd_ps(_mm256_castsi256_ps(_mm256_slli_epi32(a.v[i], 16)),
                                      _mm256_castsi256_ps(_mm256_slli_epi32(b.v[i], 16)), odd);
    }
    return result;
}

#undef EACH2
#endif
