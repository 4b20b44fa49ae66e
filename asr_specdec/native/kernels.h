/* What the native kernels share: the structs Python fills in (native/__init__.py mirrors them), storage
   formats, elementwise math that every kernel computes the same way, and int8 quantization of activations. */
#ifndef ASR_SPECDEC_KERNELS_H
#define ASR_SPECDEC_KERNELS_H

#include <math.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "claims.h"
#include "simd.h"

#ifdef _OPENMP
#include <omp.h>
#else /* without OpenMP the pragmas are ignored and every kernel runs on the calling thread */
static inline int omp_get_thread_num(void) { return 0; }
#endif

#define TILE 64
#define ROW_BLOCK 6
#ifndef QUERY_BLOCK /* queries of one head attended together (a SIMD layer with registers to spare sets more) */
#define QUERY_BLOCK 4
#endif
#ifndef SUM_REGISTERS /* vector registers an attention block's sums may take (SIMD layers with few registers: all) */
#define SUM_REGISTERS 64
#endif
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
    for (size_t line = 0; line < bytes; line += 64) __builtin_prefetch((const char *)here + PREFETCH_BYTES + line, 0, 3);
}

/* FMT_I8_VNNI_FLOAT: an FMT_I8_VNNI pack read with float32 activations, the bits an FMT_I8 pack of the same values
   gives (decoder_kernels.c, vnni_tile_float): one copy of an int8 vocabulary both screens and settles an argmax */
enum { FMT_F32 = 0, FMT_F16 = 1, FMT_BF16 = 2, FMT_I8 = 3, FMT_I8_VNNI = 4, FMT_I4_VNNI = 5, FMT_I8_VNNI_FLOAT = 6 };
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
    const int32_t *cross_rows; /* per batch row, the row of cross_k/cross_v it reads (NULL: its own): the beams
                                  of one audio share its cross states, read once for all their queries */
} Cache;

/* ---------------------------------------------------------------- elementwise math, fixed per lane */

static inline size_t format_bytes(int format) {
    return format == FMT_F32 ? 4 : format == FMT_I8 || format == FMT_I8_VNNI || format == FMT_I8_VNNI_FLOAT ? 1 : 2;
}

static inline __attribute__((always_inline)) vf load16(const void *base, size_t offset, int format) {
    switch (format) {
    case FMT_F32:
        return vf_load((const float *)base + offset);
    case FMT_F16:
        return vf_load_f16((const uint16_t *)base + offset);
    case FMT_BF16:
        return vf_load_bf16((const uint16_t *)base + offset);
    default:
        return vf_load_i8((const int8_t *)base + offset);
    }
}

static inline float load1(const void *base, size_t offset, int format) {
    switch (format) {
    case FMT_F32:
        return ((const float *)base)[offset];
    case FMT_F16:
        return f16_to_float(((const uint16_t *)base)[offset]);
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

static inline __attribute__((always_inline)) vf exp16(vf x) {
    const vf log2e = vf_set1(1.44269504088896341f);
    const vf ln2_hi = vf_set1(0.693359375f), ln2_lo = vf_set1(-2.12194440e-4f);
    x = vf_max(x, vf_set1(-104.0f));
    x = vf_min(x, vf_set1(88.7f));
    vf n = vf_round(vf_mul(x, log2e));
    vf r = vf_fnma(n, ln2_hi, x);
    r = vf_fnma(n, ln2_lo, r);
    vf p = vf_set1(1.0f / 5040.0f);
    p = vf_fma(p, r, vf_set1(1.0f / 720.0f));
    p = vf_fma(p, r, vf_set1(1.0f / 120.0f));
    p = vf_fma(p, r, vf_set1(1.0f / 24.0f));
    p = vf_fma(p, r, vf_set1(1.0f / 6.0f));
    p = vf_fma(p, r, vf_set1(0.5f));
    p = vf_fma(p, r, vf_set1(1.0f));
    p = vf_fma(p, r, vf_set1(1.0f));
    return vf_scale2(p, n);
}

/* erf: x * P(x^2) below 1, 1 - exp(Q((|x| - 2.5) / 1.5)) from 1 to 4 (fitted, within ~3 ulp), 1 above */
static inline __attribute__((always_inline)) vf erf16(vf x) {
    static const float small[8] = {1.128379225730896f, -0.37612637877464294f, 0.11283783614635468f,
                                   -0.02686547487974167f, 0.005221138708293438f, -0.0008485438884235919f,
                                   0.0001127473806263879f, -9.689741091278847e-06f};
    static const float large[13] = {-7.806815147399902f, -8.029021263122559f, -2.123760938644409f,
                                    -0.036645978689193726f, 0.010962718166410923f, -0.003196593141183257f,
                                    0.0008774833404459059f, -0.00021748137078247964f, 4.51812993560452e-05f,
                                    -6.758698418707354e-06f, -4.977346179657616e-07f, 1.5374644135590643e-06f,
                                    -6.231101110643067e-07f};
    vf a = vf_abs(x);
    vf t = vf_mul(a, a);
    vf p = vf_set1(small[7]);
    for (int i = 6; i >= 0; i--) p = vf_fma(p, t, vf_set1(small[i]));
    vf low = vf_mul(p, a);
    vf u = vf_mul(vf_sub(vf_min(a, vf_set1(4.0f)), vf_set1(2.5f)), vf_set1(1.0f / 1.5f));
    vf q = vf_set1(large[12]);
    for (int i = 11; i >= 0; i--) q = vf_fma(q, u, vf_set1(large[i]));
    vf high = vf_sub(vf_set1(1.0f), exp16(q));
    vf result = vf_blend(vf_lt(a, vf_set1(1.0f)), high, low);
    result = vf_blend(vf_ge(a, vf_set1(4.0f)), result, vf_set1(1.0f));
    return vf_with_sign_of(result, x);
}

static inline __attribute__((always_inline)) vf gelu16(vf x) { /* 0.5 x (1 + erf(x / sqrt 2)), as torch's exact GELU */
    vf e = erf16(vf_mul(x, vf_set1(0.70710678118654752440f)));
    return vf_mul(vf_mul(x, vf_set1(0.5f)), vf_add(vf_set1(1.0f), e));
}

/* ---------------------------------------------------------------- linear layers */

/* A tile's 64 columns are accumulated TILE_PASS column vectors at a time (a constant per SIMD layer: as many as
   its registers hold for ROW_BLOCK rows); each column's sums are the same whichever pass computes them. */

/* y rows (epilogue) the sums of the pass's columns from c0: per column scale (int8), bias, then store, add, GELU
   or scale. */
static inline __attribute__((always_inline)) void finish_tile(const Linear *lin, int tile, int c0, vf acc[][TILE_PASS],
                                                              int R, float *y, int ldy, int epilogue, float factor) {
    for (int c = 0; c < TILE_PASS; c++) {
        int column = tile * TILE + (c0 + c) * 16;
        int valid = lin->n - column;
        if (valid <= 0) break;
        vf scale = lin->scale ? vf_load_tail(lin->scale + column, valid) : vf_zero();
        vf bias = lin->bias ? vf_load_tail(lin->bias + column, valid) : vf_zero();
        for (int r = 0; r < R; r++) {
            vf value = acc[r][c];
            if (lin->scale) value = vf_mul(value, scale);
            if (lin->bias) value = vf_add(value, bias);
            float *out = y + (size_t)r * ldy + column;
            if (epilogue == EPI_ADD)
                value = vf_add(vf_load_tail(out, valid), value);
            else if (epilogue == EPI_GELU)
                value = gelu16(value);
            else if (epilogue == EPI_SCALE)
                value = vf_mul(value, vf_set1(factor));
            vf_store_tail(out, valid, value);
        }
    }
}


/* ---------------------------------------------------------------- int8 products with int8 activations

Each row of x is split into a few outliers (|x| above OUTLIER_RMS times the row's rms; Whisper's final hidden
states have one ~10x the rest), multiplied in float32, and the rest quantized to int8 (one scale per row, its
max |x| / 127). The weights are stored as int8 + 128 (unsigned, as vpdpbusd wants them), and the products are
summed 4 per lane in exact int32 (vi_dot_weights): with VNNI sum(q * (w + 128)) - 128 * sum(q), without it sum(q * w)
directly; the same integers either way. Rows stay independent of each other. */

#define MAX_OUTLIERS 8
#define OUTLIER_RMS 6.0f

typedef struct {
    float step;      /* the quantized part is step * q */
    int32_t offset;  /* INT8_DOT_BIAS * sum(q) */
    int32_t outliers;
    int32_t dims[MAX_OUTLIERS];
    float values[MAX_OUTLIERS];
} RowQuantization;

typedef struct {
    const int8_t *values;        /* [rows][k]: q, 0 at outliers */
    const RowQuantization *rows; /* [rows] */
} QuantizedRows;

static inline void quantize_row(int k, const float *row, int8_t *values, RowQuantization *out) {
    vf squares = vf_zero();
    for (int i = 0; i < k; i += 16) {
        vf v = vf_load(row + i);
        squares = vf_fma(v, v, squares);
    }
    const float limit = OUTLIER_RMS * sqrtf(vf_reduce_add(squares) / (float)k);
    out->outliers = 0;
    /* the largest |x| that is not an outlier, 16 at a time; a vector holding an outlier goes element by element
       (a scalar scan of every element cost a 6-token verification of large-v3 ~2 ms, in each thread) */
    const vf limits = vf_set1(limit);
    vf largest_here = vf_zero();
    float largest = 0.0f;
    for (int i = 0; i < k; i += 16) {
        vf sizes = vf_abs(vf_load(row + i));
        if (vmask_bits(vf_gt(sizes, limits)) == 0) {
            largest_here = vf_blend(vf_gt(sizes, largest_here), largest_here, sizes); /* NaN compares false */
            continue;
        }
        for (int j = i; j < i + 16; j++) {
            float size = fabsf(row[j]);
            if (size > limit && out->outliers < MAX_OUTLIERS) {
                out->dims[out->outliers] = j;
                out->values[out->outliers++] = row[j];
            } else if (size > largest) {
                largest = size;
            }
        }
    }
    const float vector_largest = vf_reduce_max(largest_here);
    largest = vector_largest > largest ? vector_largest : largest;
    const float step = largest > 0.0f ? largest / 127.0f : 1.0f;
    const vf inverse = vf_set1(1.0f / step);
    vi total = vi_zero();
    for (int i = 0; i < k; i += 16) {
        vi q = vi_round(vf_mul(vf_load(row + i), inverse));
        q = vi_max(vi_min(q, vi_set1(127)), vi_set1(-127));
        total = vi_add(total, q);
        vi_store_i8(values + i, q);
    }
    int32_t sum = vi_reduce_add(total);
    for (int o = 0; o < out->outliers; o++) { /* the outliers' products are float32 ones */
        sum -= values[out->dims[o]];
        values[out->dims[o]] = 0;
    }
    out->step = step;
    out->offset = INT8_DOT_BIAS * sum;
}

/* `dim` values (a multiple of 16, stored in `format`) as int8 with one step for them all, their max |value| / 127
   (1 where every value is 0): each value / step rounded to the nearest integer (even on ties), within -127..127.
   Returns the step. (A cross-attention value vector, quantize_int8_vectors; a query, the decoder's int8 scores.) */
static inline float quantize_vector(const void *src, int format, int dim, int8_t *out) {
    vf largest = vf_zero();
    for (int i = 0; i < dim; i += 16) largest = vf_max(largest, vf_abs(load16(src, (size_t)i, format)));
    const float top = vf_reduce_max(largest), step = top > 0.0f ? top / 127.0f : 1.0f;
    const vf inverse = vf_set1(1.0f / step);
    for (int i = 0; i < dim; i += 16) {
        vi q = vi_round(vf_mul(load16(src, (size_t)i, format), inverse));
        vi_store_i8(out + i, vi_max(vi_min(q, vi_set1(127)), vi_set1(-127)));
    }
    return step;
}

/* The exact int32 sums of the pass's columns (from c0) of an FMT_I8_VNNI tile with R quantized rows: per column
   sum(q * (w + 128)) with VNNI (sum(q * w) without it, INT8_DOT_BIAS 0). */
static inline __attribute__((always_inline)) void vnni_sums(const Linear *lin, int tile, int c0, QuantizedRows x,
                                                            vi sums[][TILE_PASS], int R) {
    const int k = lin->k;
    const uint8_t *w = (const uint8_t *)lin->packed + (size_t)tile * k * TILE;
    vi acc[ROW_BLOCK][TILE_PASS]; /* local, written out once: accumulating in `sums` itself made GCC store every
                                     partial sum to the caller's stack array (one store per vpdpbusd) */
    for (int r = 0; r < R; r++)
        for (int c = 0; c < TILE_PASS; c++) acc[r][c] = vi_zero();
    for (int g = 0; g < k / 4; g++) {
        const uint8_t *group = w + (size_t)g * TILE * 4 + 64 * c0;
        prefetch_ahead(group, 64 * TILE_PASS);
        vb weights[TILE_PASS];
        for (int c = 0; c < TILE_PASS; c++) weights[c] = vb_load(group + 64 * c);
        for (int r = 0; r < R; r++) {
            int32_t four;
            memcpy(&four, x.values + (size_t)r * k + 4 * g, 4);
            vb xb = vb_set1_i32(four);
            for (int c = 0; c < TILE_PASS; c++) acc[r][c] = vi_dot_weights(acc[r][c], weights[c], xb);
        }
    }
    for (int r = 0; r < R; r++)
        for (int c = 0; c < TILE_PASS; c++) sums[r][c] = acc[r][c];
}

/* Those sums scaled back to float32 (outliers included), before the per-column scale, bias and epilogue. */
static inline __attribute__((always_inline)) void vnni_scaled(const Linear *lin, int tile, int c0, QuantizedRows x,
                                                              vi sums[][TILE_PASS], vf acc[][TILE_PASS], int R) {
    const uint8_t *w = (const uint8_t *)lin->packed + (size_t)tile * lin->k * TILE;
    for (int r = 0; r < R; r++) {
        const RowQuantization *row = x.rows + r;
        vi offset = vi_set1(row->offset);
        vf step = vf_set1(row->step);
        for (int c = 0; c < TILE_PASS; c++) acc[r][c] = vf_mul(vf_from_vi(vi_sub(sums[r][c], offset)), step);
        for (int o = 0; o < row->outliers; o++) {
            const int dim = row->dims[o];
            const uint8_t *group = w + (size_t)(dim / 4) * TILE * 4;
            vf value = vf_set1(row->values[o]);
            for (int c = 0; c < TILE_PASS; c++) {
                vi bytes = vi_srl(vi_load(group + 64 * (c0 + c)), 8 * (dim % 4));
                vi weight = vi_sub(vi_and(bytes, vi_set1(0xff)), vi_set1(128));
                acc[r][c] = vf_fma(value, vf_from_vi(weight), acc[r][c]);
            }
        }
    }
}

/* The products of the pass's columns (from c0) of an FMT_I8_VNNI tile with R quantized rows, scaled back to
   float32 (outliers included), before the per-column scale, bias and epilogue. */
static inline __attribute__((always_inline)) void vnni_accumulate(const Linear *lin, int tile, int c0, QuantizedRows x,
                                                                  vf acc[][TILE_PASS], int R) {
    vi sums[ROW_BLOCK][TILE_PASS];
    vnni_sums(lin, tile, c0, x, sums, R);
    vnni_scaled(lin, tile, c0, x, sums, acc, R);
}

/* ---------------------------------------------------------------- what Python calls (native/__init__.py declares
   the same; tests/native/test_declarations.py checks that it does) */

size_t scratch_floats(const Model *m, const Cache *c, int tokens, int threads);
int decoder_pass(const Model *m, const Cache *c, int tokens, const int32_t *ids, const int32_t *rows,
                 const int32_t *positions, const int32_t *slots, const int32_t *limits, float *hidden,
                 float *scratch, int threads);
void linear_forward(const Linear *lin, int rows, const float *x, int ldx, float *y, int ldy, int threads);
void linear_tiles(const Linear *lin, int rows, const float *x, int ldx, int first_tile, int tiles, float *y, int ldy,
                  int threads);
long certified_argmax(const Linear *approx, const Linear *exact, int rows, const float *x, int ldx,
                      const uint8_t *suppressed, const float *error, const float *approx_norms, float *scratch,
                      int64_t *out, int threads);
void argmax_rows(const Linear *lin, int rows, const float *x, int ldx, const uint8_t *suppressed, float *scratch,
                 int64_t *out, int threads);
void draft_choice(const Linear *screen, const int8_t *rows8, const float *scale8, int rows, const float *x, int ldx,
                  const uint8_t *suppressed, const int32_t *group_begins, int candidates, float *scratch,
                  int64_t *out, int threads);
void quantize_int8_vectors(const void *src, int format, long blocks, int dim, int lanes, int8_t *dst, float *scales,
                           int threads);
int encoder_attention_bf16(const uint16_t *qkv, int length, int heads, int head_dim, float scaling, uint16_t *out,
                           uint16_t *scratch, int threads);
int encoder_attention_f32(const float *qkv, int length, int heads, int head_dim, float scaling, int int8,
                          float *out, float *scratch, int threads);
int linear_int8_bf16(const Linear *lin, int rows, const uint16_t *x, int ldx, uint16_t *y, int ldy, int gelu,
                     int threads);
int linear_int8_f32(const Linear *lin, int rows, const float *x, int ldx, float *y, int ldy, int gelu, int threads);
int int8_tiles(void);

/* ---------------------------------------------------------------- shared between the kernel files */

/* y[m, :] (epilogue) x[m, :] @ W^T for m < rows; inside a parallel region the tiles are shared out */
void linear_rows(const Linear *lin, int rows, const float *x, int ldx, float *y, int ldy, int epilogue,
                 float factor);
/* the same for FMT_I4_VNNI weights (draft_kernels.c) */
void linear_rows_int4(const Linear *lin, int rows, const float *x, int ldx, float *y, int ldy, int epilogue,
                      float factor);

#endif
