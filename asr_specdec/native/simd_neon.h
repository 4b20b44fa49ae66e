/* The SIMD layer on ARM64 NEON (the dot-product extension where compiled with +dotprod): a vector of 16 lanes is
   four 128-bit registers. Reductions follow the tree of GCC's _mm512_reduce_add_ps, as the x86 builds. */
#ifndef ASR_SPECDEC_SIMD_NEON_H
#define ASR_SPECDEC_SIMD_NEON_H

#include <arm_neon.h>

#define SIMD_ISA "neon"
#define TILE_PASS 1 /* 32 registers: 6 rows x 1 column vector (4 registers each) + the weights */
#define SCORE_CHUNKS 1
#define WEIGH_VECTORS 2
#define INT8_DOT_BIAS 0 /* the dot products multiply w itself (signed x signed) */

typedef struct { float32x4_t v[4]; } vf;
typedef struct { int32x4_t v[4]; } vi;
typedef struct { uint8x16_t v[4]; } vb;
typedef struct { uint32x4_t v[4]; } vmask;

#define SIMD_INLINE static inline __attribute__((always_inline))
#define EACH4(expression) do { for (int i = 0; i < 4; i++) result.v[i] = (expression); } while (0)

SIMD_INLINE vf vf_zero(void) { vf result; EACH4(vdupq_n_f32(0.0f)); return result; }
SIMD_INLINE vf vf_set1(float value) { vf result; EACH4(vdupq_n_f32(value)); return result; }
SIMD_INLINE vf vf_load(const float *p) { vf result; EACH4(vld1q_f32(p + 4 * i)); return result; }
SIMD_INLINE void vf_store(float *p, vf v) { for (int i = 0; i < 4; i++) vst1q_f32(p + 4 * i, v.v[i]); }
SIMD_INLINE vmask vmask_tail(int valid) {
    const int32_t lanes[4] = {0, 1, 2, 3};
    vmask result;
    EACH4(vcltq_s32(vaddq_s32(vld1q_s32(lanes), vdupq_n_s32(4 * i)), vdupq_n_s32(valid)));
    return result;
}
SIMD_INLINE vf vf_load_tail(const float *p, int valid) {
    if (valid >= 16) return vf_load(p);
    float lanes[16] = {0};
    if (valid > 0) memcpy(lanes, p, (size_t)valid * sizeof(float));
    return vf_load(lanes);
}
SIMD_INLINE void vf_store_tail(float *p, int valid, vf v) {
    if (valid >= 16) {
        vf_store(p, v);
        return;
    }
    float lanes[16];
    vf_store(lanes, v);
    if (valid > 0) memcpy(p, lanes, (size_t)valid * sizeof(float));
}
SIMD_INLINE vf vf_add(vf a, vf b) { vf result; EACH4(vaddq_f32(a.v[i], b.v[i])); return result; }
SIMD_INLINE vf vf_sub(vf a, vf b) { vf result; EACH4(vsubq_f32(a.v[i], b.v[i])); return result; }
SIMD_INLINE vf vf_mul(vf a, vf b) { vf result; EACH4(vmulq_f32(a.v[i], b.v[i])); return result; }
SIMD_INLINE vf vf_div(vf a, vf b) { vf result; EACH4(vdivq_f32(a.v[i], b.v[i])); return result; }
SIMD_INLINE vf vf_max(vf a, vf b) { vf result; EACH4(vmaxq_f32(a.v[i], b.v[i])); return result; }
SIMD_INLINE vf vf_min(vf a, vf b) { vf result; EACH4(vminq_f32(a.v[i], b.v[i])); return result; }
SIMD_INLINE vf vf_abs(vf a) { vf result; EACH4(vabsq_f32(a.v[i])); return result; }
SIMD_INLINE vf vf_fma(vf a, vf b, vf c) { vf result; EACH4(vfmaq_f32(c.v[i], a.v[i], b.v[i])); return result; }
SIMD_INLINE vf vf_fnma(vf a, vf b, vf c) { vf result; EACH4(vfmsq_f32(c.v[i], a.v[i], b.v[i])); return result; }
SIMD_INLINE float vf_reduce_add(vf v) { /* lanes 0-7 + 8-15, 0-3 + 4-7, {0,1} + {2,3}, 0 + 1 */
    float32x4_t four = vaddq_f32(vaddq_f32(v.v[2], v.v[0]), vaddq_f32(v.v[3], v.v[1]));
    float32x2_t two = vadd_f32(vget_low_f32(four), vget_high_f32(four));
    return vget_lane_f32(two, 0) + vget_lane_f32(two, 1);
}
SIMD_INLINE float vf_reduce_max(vf v) { return vmaxvq_f32(vmaxq_f32(vmaxq_f32(v.v[0], v.v[1]), vmaxq_f32(v.v[2], v.v[3]))); }
SIMD_INLINE vf vf_round(vf v) { vf result; EACH4(vrndnq_f32(v.v[i])); return result; }
/* p * 2^n for integral n in -252..254, one rounding: two exact powers of two, the first product exact */
SIMD_INLINE vf vf_scale2(vf p, vf n) {
    vf result;
    for (int i = 0; i < 4; i++) {
        int32x4_t whole = vcvtnq_s32_f32(n.v[i]);
        int32x4_t half = vshrq_n_s32(whole, 1), rest = vsubq_s32(whole, half);
        float32x4_t first = vreinterpretq_f32_s32(vshlq_n_s32(vaddq_s32(half, vdupq_n_s32(127)), 23));
        float32x4_t second = vreinterpretq_f32_s32(vshlq_n_s32(vaddq_s32(rest, vdupq_n_s32(127)), 23));
        result.v[i] = vmulq_f32(vmulq_f32(p.v[i], first), second);
    }
    return result;
}
SIMD_INLINE vmask vf_lt(vf a, vf b) { vmask result; EACH4(vcltq_f32(a.v[i], b.v[i])); return result; }
SIMD_INLINE vmask vf_ge(vf a, vf b) { vmask result; EACH4(vcgeq_f32(a.v[i], b.v[i])); return result; }
SIMD_INLINE vmask vf_gt(vf a, vf b) { vmask result; EACH4(vcgtq_f32(a.v[i], b.v[i])); return result; }
SIMD_INLINE vmask vmask_and(vmask a, vmask b) { vmask result; EACH4(vandq_u32(a.v[i], b.v[i])); return result; }
SIMD_INLINE uint32_t vmask_bits(vmask m) {
    const uint32_t weights[4] = {1, 2, 4, 8};
    uint32_t bits = 0;
    for (int i = 0; i < 4; i++) bits |= vaddvq_u32(vandq_u32(m.v[i], vld1q_u32(weights))) << (4 * i);
    return bits;
}
SIMD_INLINE vf vf_blend(vmask m, vf if_false, vf if_true) {
    vf result;
    EACH4(vbslq_f32(m.v[i], if_true.v[i], if_false.v[i]));
    return result;
}
SIMD_INLINE vf vf_max_tail(vf best, vf v, int valid) { return vf_blend(vmask_tail(valid), best, vf_max(best, v)); }
SIMD_INLINE vf vf_zero_tail(vf v, int valid) {
    vmask m = vmask_tail(valid);
    vf result;
    EACH4(vreinterpretq_f32_u32(vandq_u32(vreinterpretq_u32_f32(v.v[i]), m.v[i])));
    return result;
}
SIMD_INLINE vf vf_with_sign_of(vf magnitude, vf x) {
    vf result;
    EACH4(vreinterpretq_f32_u32(vorrq_u32(vreinterpretq_u32_f32(magnitude.v[i]),
                                          vandq_u32(vreinterpretq_u32_f32(x.v[i]), vdupq_n_u32(0x80000000u)))));
    return result;
}

/* storage formats */
SIMD_INLINE vf vf_load_f16(const uint16_t *p) {
    vf result;
    EACH4(vcvt_f32_f16(vreinterpret_f16_u16(vld1_u16(p + 4 * i))));
    return result;
}
SIMD_INLINE vf vf_load_bf16(const uint16_t *p) {
    vf result;
    EACH4(vreinterpretq_f32_u32(vshll_n_u16(vld1_u16(p + 4 * i), 16)));
    return result;
}
SIMD_INLINE vf vf_load_i8(const int8_t *p) {
    int8x16_t bytes = vld1q_s8(p);
    int16x8_t low = vmovl_s8(vget_low_s8(bytes)), high = vmovl_s8(vget_high_s8(bytes));
    vf result;
    result.v[0] = vcvtq_f32_s32(vmovl_s16(vget_low_s16(low)));
    result.v[1] = vcvtq_f32_s32(vmovl_s16(vget_high_s16(low)));
    result.v[2] = vcvtq_f32_s32(vmovl_s16(vget_low_s16(high)));
    result.v[3] = vcvtq_f32_s32(vmovl_s16(vget_high_s16(high)));
    return result;
}
SIMD_INLINE float f16_to_float(uint16_t bits) {
    __fp16 value;
    memcpy(&value, &bits, 2);
    return (float)value;
}
SIMD_INLINE uint32x4_t bf16_rounded(uint32x4_t bits) { /* the bfloat16 rounding to nearest even, in each lane */
    uint32x4_t lsb = vandq_u32(vshrq_n_u32(bits, 16), vdupq_n_u32(1));
    return vshrq_n_u32(vaddq_u32(bits, vaddq_u32(vdupq_n_u32(0x7fff), lsb)), 16);
}
SIMD_INLINE void vf_store_bf16(uint16_t *p, vf v) { /* as vcvtneps2bf16: denormals to signed zero, NaN quiet */
    for (int i = 0; i < 4; i++) {
        uint32x4_t bits = vreinterpretq_u32_f32(v.v[i]);
        uint32x4_t tiny = vceqq_u32(vandq_u32(bits, vdupq_n_u32(0x7f800000)), vdupq_n_u32(0));
        uint32x4_t nan = vcgtq_u32(vandq_u32(bits, vdupq_n_u32(0x7fffffff)), vdupq_n_u32(0x7f800000));
        uint32x4_t rounded = bf16_rounded(bits);
        rounded = vbslq_u32(tiny, vandq_u32(vshrq_n_u32(bits, 16), vdupq_n_u32(0x8000)), rounded);
        rounded = vbslq_u32(nan, vorrq_u32(vshrq_n_u32(bits, 16), vdupq_n_u32(0x40)), rounded);
        vst1_u16(p + 4 * i, vmovn_u32(rounded));
    }
}
SIMD_INLINE void vf_store_bf16_tail(uint16_t *p, int valid, vf v) {
    uint16_t all[16];
    for (int i = 0; i < 4; i++) vst1_u16(all + 4 * i, vmovn_u32(bf16_rounded(vreinterpretq_u32_f32(v.v[i]))));
    memcpy(p, all, (size_t)(valid < 16 ? valid : 16) * 2);
}

/* 16 int32 lanes */
SIMD_INLINE vi vi_zero(void) { vi result; EACH4(vdupq_n_s32(0)); return result; }
SIMD_INLINE vi vi_set1(int32_t value) { vi result; EACH4(vdupq_n_s32(value)); return result; }
SIMD_INLINE vi vi_load(const void *p) { vi result; EACH4(vld1q_s32((const int32_t *)p + 4 * i)); return result; }
SIMD_INLINE vi vi_add(vi a, vi b) { vi result; EACH4(vaddq_s32(a.v[i], b.v[i])); return result; }
SIMD_INLINE vi vi_sub(vi a, vi b) { vi result; EACH4(vsubq_s32(a.v[i], b.v[i])); return result; }
SIMD_INLINE vi vi_min(vi a, vi b) { vi result; EACH4(vminq_s32(a.v[i], b.v[i])); return result; }
SIMD_INLINE vi vi_max(vi a, vi b) { vi result; EACH4(vmaxq_s32(a.v[i], b.v[i])); return result; }
SIMD_INLINE vi vi_and(vi a, vi b) { vi result; EACH4(vandq_s32(a.v[i], b.v[i])); return result; }
SIMD_INLINE vi vi_srl(vi a, int count) {
    vi result;
    EACH4(vreinterpretq_s32_u32(vshlq_u32(vreinterpretq_u32_s32(a.v[i]), vdupq_n_s32(-count))));
    return result;
}
SIMD_INLINE vi vi_sll(vi a, int count) {
    vi result;
    EACH4(vreinterpretq_s32_u32(vshlq_u32(vreinterpretq_u32_s32(a.v[i]), vdupq_n_s32(count))));
    return result;
}
SIMD_INLINE vi vi_or(vi a, vi b) { vi result; EACH4(vorrq_s32(a.v[i], b.v[i])); return result; }
SIMD_INLINE void vi_store(void *p, vi v) {
    for (int i = 0; i < 4; i++) vst1q_s32((int32_t *)p + 4 * i, v.v[i]);
}
SIMD_INLINE int32_t vi_reduce_add(vi v) { return vaddvq_s32(vaddq_s32(vaddq_s32(v.v[0], v.v[1]), vaddq_s32(v.v[2], v.v[3]))); }
SIMD_INLINE vf vf_from_vi(vi v) { vf result; EACH4(vcvtq_f32_s32(v.v[i])); return result; }
SIMD_INLINE vi vi_round(vf v) { vi result; EACH4(vcvtnq_s32_f32(v.v[i])); return result; }
SIMD_INLINE void vi_store_i16(int16_t *p, vi v) { /* values in -32768..32767 */
    vst1q_s16(p, vcombine_s16(vmovn_s32(v.v[0]), vmovn_s32(v.v[1])));
    vst1q_s16(p + 8, vcombine_s16(vmovn_s32(v.v[2]), vmovn_s32(v.v[3])));
}
SIMD_INLINE void vi_store_i8(int8_t *p, vi v) { /* values in -128..127 */
    int16x8_t low = vcombine_s16(vmovn_s32(v.v[0]), vmovn_s32(v.v[1]));
    int16x8_t high = vcombine_s16(vmovn_s32(v.v[2]), vmovn_s32(v.v[3]));
    vst1q_s8(p, vcombine_s8(vmovn_s16(low), vmovn_s16(high)));
}

/* 64 bytes: 16 lanes of 4 */
SIMD_INLINE vb vb_load(const void *p) { vb result; EACH4(vld1q_u8((const uint8_t *)p + 16 * i)); return result; }
SIMD_INLINE vb vb_set1_i32(int32_t four) { vb result; EACH4(vreinterpretq_u8_s32(vdupq_n_s32(four))); return result; }
SIMD_INLINE vb vb_low_nibbles(vb v) { vb result; EACH4(vandq_u8(v.v[i], vdupq_n_u8(0x0f))); return result; }
SIMD_INLINE vb vb_high_nibbles(vb v) { vb result; EACH4(vshrq_n_u8(v.v[i], 4)); return result; }
/* the per lane sum of 4 products of signed bytes (each product and each pair fits in int16) */
SIMD_INLINE int32x4_t dot4(int32x4_t acc, int8x16_t a, int8x16_t b) {
#ifdef __ARM_FEATURE_DOTPROD
    return vdotq_s32(acc, a, b);
#else
    int16x8_t low = vmull_s8(vget_low_s8(a), vget_low_s8(b)), high = vmull_high_s8(a, b);
    return vaddq_s32(acc, vpaddlq_s16(vpaddq_s16(low, high)));
#endif
}
SIMD_INLINE vi vi_dot_weights(vi acc, vb biased, vb x) {
    vi result;
    EACH4(dot4(acc.v[i], vreinterpretq_s8_u8(veorq_u8(biased.v[i], vdupq_n_u8(0x80))), vreinterpretq_s8_u8(x.v[i])));
    return result;
}
SIMD_INLINE vi vi_dot_nibbles(vi acc, vb u, vb x) {
    vi result;
    EACH4(dot4(acc.v[i], vreinterpretq_s8_u8(u.v[i]), vreinterpretq_s8_u8(x.v[i])));
    return result;
}
/* acc + per lane sum of 2 products of int16 pairs */
SIMD_INLINE vi vi_dot_pairs(vi acc, vb a, vb b) {
    vi result;
    EACH4(vaddq_s32(acc.v[i], vpaddq_s32(vmull_s16(vget_low_s16(vreinterpretq_s16_u8(a.v[i])),
                                                   vget_low_s16(vreinterpretq_s16_u8(b.v[i]))),
                                         vmull_high_s16(vreinterpretq_s16_u8(a.v[i]), vreinterpretq_s16_u8(b.v[i])))));
    return result;
}
/* 16 lanes of the int16 pair (first[l], second[l]) from 16 int8 values each */
SIMD_INLINE vb vb_pairs_i8(const int8_t *first, const int8_t *second) {
    int8x16_t a = vld1q_s8(first), b = vld1q_s8(second);
    int8x16_t low = vzip1q_s8(a, b), high = vzip2q_s8(a, b);
    vb result;
    result.v[0] = vreinterpretq_u8_s16(vmovl_s8(vget_low_s8(low)));
    result.v[1] = vreinterpretq_u8_s16(vmovl_high_s8(low));
    result.v[2] = vreinterpretq_u8_s16(vmovl_s8(vget_low_s8(high)));
    result.v[3] = vreinterpretq_u8_s16(vmovl_high_s8(high));
    return result;
}
/* acc + a_odd * b_odd, then + a_even * b_even (vdpbf16ps's order; the products of bfloat16 values are exact) */
SIMD_INLINE vf vf_dot_bf16(vf acc, vb a, vb b) {
    const uint32x4_t high = vdupq_n_u32(0xffff0000u);
    vf result;
    for (int i = 0; i < 4; i++) {
        uint32x4_t a32 = vreinterpretq_u32_u8(a.v[i]), b32 = vreinterpretq_u32_u8(b.v[i]);
        float32x4_t odd = vfmaq_f32(acc.v[i], vreinterpretq_f32_u32(vandq_u32(a32, high)),
                                    vreinterpretq_f32_u32(vandq_u32(b32, high)));
        result.v[i] = vfmaq_f32(odd, vreinterpretq_f32_u32(vshlq_n_u32(a32, 16)), vreinterpretq_f32_u32(vshlq_n_u32(b32, 16)));
    }
    return result;
}

#undef EACH4
#endif
