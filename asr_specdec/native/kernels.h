/* What the native kernels share: the structs Python fills in (native/__init__.py mirrors them), storage
   formats, elementwise math that every kernel computes the same way, and int8 quantization of activations. */
#ifndef ASR_SPECDEC_KERNELS_H
#define ASR_SPECDEC_KERNELS_H

#include <immintrin.h>
#include <math.h>
#include <omp.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define TILE 64
#define ROW_BLOCK 6
#define QUERY_BLOCK 4
#define MAX_HEAD_VECTORS 8 /* head_dim up to 128 */
/* Calls BLOCK(R) with R the compile-time constant equal to `rows` (1 to ROW_BLOCK), so that a kernel's loops over
   its rows unroll and its accumulators stay in registers. */
#define WITH_CONSTANT_ROWS(rows, BLOCK)                                                                      \
    switch (rows) {                                                                                          \
    case 1: BLOCK(1); break;                                                                                 \
    case 2: BLOCK(2); break;                                                                                 \
    case 3: BLOCK(3); break;                                                                                 \
    case 4: BLOCK(4); break;                                                                                 \
    case 5: BLOCK(5); break;                                                                                 \
    default: BLOCK(6); break;                                                                                \
    }

#define PREFETCH_BYTES 2048 /* how far ahead a weight stream is prefetched: DRAM latency hides behind the products */

static inline void prefetch_ahead(const void *here, size_t bytes) {
    for (size_t line = 0; line < bytes; line += 64) _mm_prefetch((const char *)here + PREFETCH_BYTES + line, _MM_HINT_T0);
}

enum { FMT_F32 = 0, FMT_F16 = 1, FMT_BF16 = 2, FMT_I8 = 3, FMT_I8_VNNI = 4, FMT_I4_VNNI = 5 };
enum { EPI_STORE = 0, EPI_ADD = 1, EPI_GELU = 2, EPI_SCALE = 3 };

typedef struct {
    int32_t format, n, k, n_tiles;
    int32_t group;      /* FMT_I4_VNNI: inputs per scale (see draft_kernels.c); else unused */
    const void *packed; /* [n_tiles][k][64]; FMT_I8_VNNI: [n_tiles][k / 4][64][4] of int8 + 128 */
    const float *scale; /* [n] per output column (int8 only; FMT_I4_VNNI: [k / group][n]), else NULL */
    const float *bias;  /* [n] or NULL */
} Linear;

typedef struct {
    const float *ln1_w, *ln1_b;
    Linear qkv, self_out;
    const float *ln2_w, *ln2_b;
    Linear cross_q, cross_out;
    const float *ln3_w, *ln3_b;
    Linear fc1, fc2;
} Layer;

typedef struct {
    int32_t d, heads, head_dim, ffn, n_layers;
    float scaling, eps;
    const float *embed;     /* [vocab, d] */
    const float *positions; /* [max_positions, d] */
    const float *ln_w, *ln_b;
    const Layer *layers;
} Model;

typedef struct {
    int32_t kv_format;    /* self-attention keys/values: FMT_F32 or FMT_BF16 */
    int32_t cross_format; /* cross-attention keys/values: FMT_F32, FMT_BF16 or (drafters) FMT_I8 */
    int32_t slots;        /* self key/value slots per row (padded to 16) */
    int32_t enc_len, enc_pad;
    void *const *self_k;  /* per layer [batch][heads][slots / 16][head_dim][16]: 16 keys transposed per block */
    void *const *self_v;  /* per layer [batch][heads][slots][head_dim] */
    void *const *cross_k; /* per layer [batch][heads][enc_pad / 16][head_dim][16] */
    void *const *cross_v; /* per layer [batch][heads][enc_len][head_dim] */
    const float *const *cross_k_scale; /* FMT_I8 only: per layer [batch][heads][enc_pad], one scale per key */
    const float *const *cross_v_scale; /* FMT_I8 only: per layer [batch][heads][enc_len], one per value */
} Cache;

/* ---------------------------------------------------------------- elementwise math, fixed per lane */

static inline size_t format_bytes(int format) {
    return format == FMT_F32 ? 4 : format == FMT_I8 || format == FMT_I8_VNNI ? 1 : 2;
}

static inline __m512 load16(const void *base, size_t offset, int format) {
    switch (format) {
    case FMT_F32:
        return _mm512_loadu_ps((const float *)base + offset);
    case FMT_F16:
        return _mm512_cvtph_ps(_mm256_loadu_si256((const __m256i *)((const uint16_t *)base + offset)));
    case FMT_BF16:
        return _mm512_castsi512_ps(_mm512_slli_epi32(
            _mm512_cvtepu16_epi32(_mm256_loadu_si256((const __m256i *)((const uint16_t *)base + offset))), 16));
    default:
        return _mm512_cvtepi32_ps(_mm512_cvtepi8_epi32(_mm_loadu_si128((const __m128i *)((const int8_t *)base + offset))));
    }
}

static inline float load1(const void *base, size_t offset, int format) {
    switch (format) {
    case FMT_F32:
        return ((const float *)base)[offset];
    case FMT_F16:
        return _cvtsh_ss(((const uint16_t *)base)[offset]);
    case FMT_BF16: {
        uint32_t bits = (uint32_t)((const uint16_t *)base)[offset] << 16;
        float value;
        memcpy(&value, &bits, 4);
        return value;
    }
    default:
        return (float)((const int8_t *)base)[offset];
    }
}

static inline uint16_t to_bf16(float value) { /* round to nearest even, as torch */
    uint32_t bits;
    memcpy(&bits, &value, 4);
    if ((bits & 0x7fffffffu) > 0x7f800000u) return (uint16_t)((bits >> 16) | 0x40);
    return (uint16_t)((bits + 0x7fffu + ((bits >> 16) & 1u)) >> 16);
}

static inline void store1(void *base, size_t offset, int format, float value) {
    if (format == FMT_BF16)
        ((uint16_t *)base)[offset] = to_bf16(value);
    else
        ((float *)base)[offset] = value;
}

static inline __m512 exp16(__m512 x) {
    const __m512 log2e = _mm512_set1_ps(1.44269504088896341f);
    const __m512 ln2_hi = _mm512_set1_ps(0.693359375f), ln2_lo = _mm512_set1_ps(-2.12194440e-4f);
    x = _mm512_max_ps(x, _mm512_set1_ps(-104.0f));
    x = _mm512_min_ps(x, _mm512_set1_ps(88.7f));
    __m512 n = _mm512_roundscale_ps(_mm512_mul_ps(x, log2e), _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC);
    __m512 r = _mm512_fnmadd_ps(n, ln2_hi, x);
    r = _mm512_fnmadd_ps(n, ln2_lo, r);
    __m512 p = _mm512_set1_ps(1.0f / 5040.0f);
    p = _mm512_fmadd_ps(p, r, _mm512_set1_ps(1.0f / 720.0f));
    p = _mm512_fmadd_ps(p, r, _mm512_set1_ps(1.0f / 120.0f));
    p = _mm512_fmadd_ps(p, r, _mm512_set1_ps(1.0f / 24.0f));
    p = _mm512_fmadd_ps(p, r, _mm512_set1_ps(1.0f / 6.0f));
    p = _mm512_fmadd_ps(p, r, _mm512_set1_ps(0.5f));
    p = _mm512_fmadd_ps(p, r, _mm512_set1_ps(1.0f));
    p = _mm512_fmadd_ps(p, r, _mm512_set1_ps(1.0f));
    return _mm512_scalef_ps(p, n);
}

/* erf: x * P(x^2) below 1, 1 - exp(Q((|x| - 2.5) / 1.5)) from 1 to 4 (fitted, within ~3 ulp), 1 above */
static inline __m512 erf16(__m512 x) {
    static const float small[8] = {1.128379225730896f, -0.37612637877464294f, 0.11283783614635468f,
                                   -0.02686547487974167f, 0.005221138708293438f, -0.0008485438884235919f,
                                   0.0001127473806263879f, -9.689741091278847e-06f};
    static const float large[13] = {-7.806815147399902f, -8.029021263122559f, -2.123760938644409f,
                                    -0.036645978689193726f, 0.010962718166410923f, -0.003196593141183257f,
                                    0.0008774833404459059f, -0.00021748137078247964f, 4.51812993560452e-05f,
                                    -6.758698418707354e-06f, -4.977346179657616e-07f, 1.5374644135590643e-06f,
                                    -6.231101110643067e-07f};
    __m512 a = _mm512_abs_ps(x);
    __m512 t = _mm512_mul_ps(a, a);
    __m512 p = _mm512_set1_ps(small[7]);
    for (int i = 6; i >= 0; i--) p = _mm512_fmadd_ps(p, t, _mm512_set1_ps(small[i]));
    __m512 low = _mm512_mul_ps(p, a);
    __m512 u = _mm512_mul_ps(_mm512_sub_ps(_mm512_min_ps(a, _mm512_set1_ps(4.0f)), _mm512_set1_ps(2.5f)),
                             _mm512_set1_ps(1.0f / 1.5f));
    __m512 q = _mm512_set1_ps(large[12]);
    for (int i = 11; i >= 0; i--) q = _mm512_fmadd_ps(q, u, _mm512_set1_ps(large[i]));
    __m512 high = _mm512_sub_ps(_mm512_set1_ps(1.0f), exp16(q));
    __m512 result = _mm512_mask_blend_ps(_mm512_cmp_ps_mask(a, _mm512_set1_ps(1.0f), _CMP_LT_OQ), high, low);
    result = _mm512_mask_blend_ps(_mm512_cmp_ps_mask(a, _mm512_set1_ps(4.0f), _CMP_GE_OQ), result,
                                  _mm512_set1_ps(1.0f));
    /* copy the sign of x */
    return _mm512_castsi512_ps(_mm512_or_si512(_mm512_castps_si512(result),
                                               _mm512_and_si512(_mm512_castps_si512(x), _mm512_set1_epi32((int)0x80000000u))));
}

static inline __m512 gelu16(__m512 x) { /* 0.5 x (1 + erf(x / sqrt 2)), as torch's exact GELU */
    __m512 e = erf16(_mm512_mul_ps(x, _mm512_set1_ps(0.70710678118654752440f)));
    return _mm512_mul_ps(_mm512_mul_ps(x, _mm512_set1_ps(0.5f)), _mm512_add_ps(_mm512_set1_ps(1.0f), e));
}

static inline __mmask16 tail_mask(int valid) {
    return valid >= 16 ? (__mmask16)0xffff : valid <= 0 ? (__mmask16)0 : (__mmask16)((1u << valid) - 1u);
}

/* ---------------------------------------------------------------- linear layers */

/* y rows (epilogue) the tile's sums: per column scale (int8), bias, then store, add, GELU or scale. */
static inline __attribute__((always_inline)) void finish_tile(const Linear *lin, int tile, __m512 acc[][4], int R,
                                                              float *y, int ldy, int epilogue, float factor) {
    for (int c = 0; c < 4; c++) {
        int column = tile * TILE + c * 16;
        int valid = lin->n - column;
        if (valid <= 0) break;
        __mmask16 mask = tail_mask(valid);
        __m512 scale = lin->scale ? _mm512_maskz_loadu_ps(mask, lin->scale + column) : _mm512_setzero_ps();
        __m512 bias = lin->bias ? _mm512_maskz_loadu_ps(mask, lin->bias + column) : _mm512_setzero_ps();
        for (int r = 0; r < R; r++) {
            __m512 value = acc[r][c];
            if (lin->scale) value = _mm512_mul_ps(value, scale);
            if (lin->bias) value = _mm512_add_ps(value, bias);
            float *out = y + (size_t)r * ldy + column;
            if (epilogue == EPI_ADD)
                value = _mm512_add_ps(_mm512_maskz_loadu_ps(mask, out), value);
            else if (epilogue == EPI_GELU)
                value = gelu16(value);
            else if (epilogue == EPI_SCALE)
                value = _mm512_mul_ps(value, _mm512_set1_ps(factor));
            _mm512_mask_storeu_ps(out, mask, value);
        }
    }
}


/* ---------------------------------------------------------------- int8 products with int8 activations (VNNI)

Each row of x is split into a few outliers (|x| above OUTLIER_RMS times the row's rms; Whisper's final hidden
states have one ~10x the rest), multiplied in float32, and the rest quantized to int8 (one scale per row, its
max |x| / 127). The weights are stored as int8 + 128 (unsigned, as vpdpbusd wants them), and 64 products are
summed per instruction in exact int32: sum(q * w) = sum(q * (w + 128)) - 128 * sum(q). Rows stay independent
of each other. */

#define VNNI __attribute__((target("avx512vnni")))
#define MAX_OUTLIERS 8
#define OUTLIER_RMS 6.0f

typedef struct {
    float step;      /* the quantized part is step * q */
    int32_t offset;  /* 128 * sum(q) */
    int32_t outliers;
    int32_t dims[MAX_OUTLIERS];
    float values[MAX_OUTLIERS];
} RowQuantization;

typedef struct {
    const int8_t *values;        /* [rows][k]: q, 0 at outliers */
    const RowQuantization *rows; /* [rows] */
} QuantizedRows;

static inline void quantize_row(int k, const float *row, int8_t *values, RowQuantization *out) {
    __m512 squares = _mm512_setzero_ps();
    for (int i = 0; i < k; i += 16) {
        __m512 v = _mm512_loadu_ps(row + i);
        squares = _mm512_fmadd_ps(v, v, squares);
    }
    const float limit = OUTLIER_RMS * sqrtf(_mm512_reduce_add_ps(squares) / (float)k);
    out->outliers = 0;
    float largest = 0.0f;
    for (int i = 0; i < k; i++) {
        float size = fabsf(row[i]);
        if (size > limit && out->outliers < MAX_OUTLIERS) {
            out->dims[out->outliers] = i;
            out->values[out->outliers++] = row[i];
        } else if (size > largest) {
            largest = size;
        }
    }
    const float step = largest > 0.0f ? largest / 127.0f : 1.0f;
    const __m512 inverse = _mm512_set1_ps(1.0f / step);
    __m512i total = _mm512_setzero_si512();
    for (int i = 0; i < k; i += 16) {
        __m512i q = _mm512_cvtps_epi32(_mm512_mul_ps(_mm512_loadu_ps(row + i), inverse));
        q = _mm512_max_epi32(_mm512_min_epi32(q, _mm512_set1_epi32(127)), _mm512_set1_epi32(-127));
        for (int o = 0; o < out->outliers; o++) /* rare: at most MAX_OUTLIERS lanes per row */
            if (out->dims[o] >= i && out->dims[o] < i + 16)
                q = _mm512_mask_mov_epi32(q, (__mmask16)(1u << (out->dims[o] - i)), _mm512_setzero_si512());
        total = _mm512_add_epi32(total, q);
        _mm_storeu_si128((__m128i *)(values + i), _mm512_cvtepi32_epi8(q));
    }
    out->step = step;
    out->offset = 128 * _mm512_reduce_add_epi32(total);
}

/* The products of an FMT_I8_VNNI tile with R quantized rows, scaled back to float32 (outliers included), before
   the per-column scale, bias and epilogue. */
static inline VNNI __attribute__((always_inline)) void vnni_accumulate(const Linear *lin, int tile, QuantizedRows x,
                                                                  __m512 acc[][4], int R) {
    const int k = lin->k;
    const uint8_t *w = (const uint8_t *)lin->packed + (size_t)tile * k * TILE;
    __m512i sums[ROW_BLOCK][4];
    for (int r = 0; r < R; r++)
        for (int c = 0; c < 4; c++) sums[r][c] = _mm512_setzero_si512();
    for (int g = 0; g < k / 4; g++) {
        const uint8_t *group = w + (size_t)g * TILE * 4;
        prefetch_ahead(group, TILE * 4);
        __m512i w0 = _mm512_loadu_si512(group), w1 = _mm512_loadu_si512(group + 64);
        __m512i w2 = _mm512_loadu_si512(group + 128), w3 = _mm512_loadu_si512(group + 192);
        for (int r = 0; r < R; r++) {
            int32_t four;
            memcpy(&four, x.values + (size_t)r * k + 4 * g, 4);
            __m512i xb = _mm512_set1_epi32(four);
            sums[r][0] = _mm512_dpbusd_epi32(sums[r][0], w0, xb);
            sums[r][1] = _mm512_dpbusd_epi32(sums[r][1], w1, xb);
            sums[r][2] = _mm512_dpbusd_epi32(sums[r][2], w2, xb);
            sums[r][3] = _mm512_dpbusd_epi32(sums[r][3], w3, xb);
        }
    }
    for (int r = 0; r < R; r++) {
        const RowQuantization *row = x.rows + r;
        __m512i offset = _mm512_set1_epi32(row->offset);
        __m512 step = _mm512_set1_ps(row->step);
        for (int c = 0; c < 4; c++)
            acc[r][c] = _mm512_mul_ps(_mm512_cvtepi32_ps(_mm512_sub_epi32(sums[r][c], offset)), step);
        for (int o = 0; o < row->outliers; o++) {
            const int dim = row->dims[o];
            const uint8_t *group = w + (size_t)(dim / 4) * TILE * 4;
            __m512 value = _mm512_set1_ps(row->values[o]);
            for (int c = 0; c < 4; c++) {
                __m512i bytes = _mm512_srli_epi32(_mm512_loadu_si512(group + 64 * c), 8 * (dim % 4));
                __m512i weight = _mm512_sub_epi32(_mm512_and_si512(bytes, _mm512_set1_epi32(0xff)),
                                                  _mm512_set1_epi32(128));
                acc[r][c] = _mm512_fmadd_ps(value, _mm512_cvtepi32_ps(weight), acc[r][c]);
            }
        }
    }
}

/* y[m, :] (epilogue) x[m, :] @ W^T for m < rows; inside a parallel region the tiles are shared out */
void linear_rows(const Linear *lin, int rows, const float *x, int ldx, float *y, int ldy, int epilogue,
                 float factor);
/* the same for FMT_I4_VNNI weights (draft_kernels.c) */
void linear_rows_int4(const Linear *lin, int rows, const float *x, int ldx, float *y, int ldy, int epilogue,
                      float factor);

#endif
