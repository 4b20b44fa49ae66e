/* The encoder's self-attention, in bfloat16 (bfloat16 pair products as vdpbf16ps computes them: native with
   AVX512-BF16, two fused multiply-adds elsewhere) and in float32, and its linear layers as int8 products.

Hand-written rather than PyTorch's scaled_dot_product_attention: every build (AVX-512, AVX2, NEON) computes each
output with one fixed chain of operations, so the builds give the same bits (tests/native/test_builds.py), and on
AVX2 PyTorch's float32 flash attention runs at about a quarter of the FMA rate (docs/compute.md). */
#include "kernels.h"
#include "int8_tiles.h"

/* ---------------------------------------------------------------- encoder self-attention in bfloat16 */

#define ENC_QUERIES 8 /* queries per tile: their scores over every key fit in L1/L2 */
#define ENC_KEYS 32   /* keys per score block: two vectors per query */
#define ENC_AV_QUERIES 4
#define ENC_SCORE_QUERIES (TILE_PASS == 4 ? ENC_QUERIES : 2) /* queries scored together: what the registers hold */

/* A row of scores' softmax weights exp(score - max), zero from `length` up to `padded`, stored in bfloat16 (`bf16`)
   or float32 (in place over the scores allowed); returns their float32 total. */
static inline float softmax_weights(const float *row, int length, int padded, void *weights, int bf16) {
    vf top = vf_set1(-INFINITY);
    for (int k = 0; k < length; k += 16) top = vf_max_tail(top, vf_load(row + k), length - k);
    const vf shift = vf_set1(vf_reduce_max(top));
    vf sum = vf_zero();
    for (int k = 0; k < padded; k += 16) {
        vf e = vf_zero_tail(exp16(vf_sub(vf_load(row + k), shift)), length - k);
        sum = vf_add(sum, e);
        if (bf16)
            vf_store_bf16((uint16_t *)weights + k, e);
        else
            vf_store((float *)weights + k, e);
    }
    return vf_reduce_add(sum);
}

/* Pack one head's keys as [block of 16 keys][dim pair][16][2] and values as [key pair][head_dim][2], zero past
   `length` up to `padded`, so both products below load whole vectors of bfloat16 pairs. */
static void pack_keys_values(const uint16_t *qkv, int length, int padded, int width, int head, int head_dim,
                             uint16_t *keys, uint16_t *values) {
    const int stride = 3 * width, pairs = head_dim / 2;
    for (int j = 0; j < padded; j++) {
        const uint16_t *key = qkv + (size_t)j * stride + width + head * head_dim;
        const uint16_t *value = qkv + (size_t)j * stride + 2 * width + head * head_dim;
        for (int p = 0; p < pairs; p++)
            for (int e = 0; e < 2; e++)
                keys[(((size_t)(j / 16) * pairs + p) * 16 + j % 16) * 2 + e] = j < length ? key[2 * p + e] : 0;
        for (int i = 0; i < head_dim; i++)
            values[((size_t)(j / 2) * head_dim + i) * 2 + j % 2] = j < length ? value[i] : 0;
    }
}

/* out rows (`rows` of ENC_AV_QUERIES, `width` apart) = bfloat16 softmax weights [row][padded] @ packed values,
   divided by each row's total; `vectors` (head_dim / 16) is a constant at every call. */
static inline __attribute__((always_inline)) void weigh_values(const uint16_t *values, const uint16_t *weights,
                                                               int padded, const float *total, int rows,
                                                               uint16_t *out, int width, const int vectors) {
    const uint32_t *pair_weights[ENC_AV_QUERIES];
    for (int q = 0; q < ENC_AV_QUERIES; q++) pair_weights[q] = (const uint32_t *)(weights + (size_t)(q < rows ? q : 0) * padded);
    for (int v0 = 0; v0 < vectors; v0 += WEIGH_VECTORS) { /* as many head vectors at once as the registers hold */
        const int VN = vectors - v0 < WEIGH_VECTORS ? vectors - v0 : WEIGH_VECTORS;
        vf acc[ENC_AV_QUERIES][WEIGH_VECTORS];
        for (int q = 0; q < ENC_AV_QUERIES; q++)
            for (int v = 0; v < VN; v++) acc[q][v] = vf_zero();
        for (int pair = 0; pair < padded / 2; pair++) {
            const uint16_t *value = values + (size_t)pair * vectors * 32;
            vb vv[WEIGH_VECTORS];
            for (int v = 0; v < VN; v++) vv[v] = vb_load(value + (size_t)(v0 + v) * 32);
            for (int q = 0; q < ENC_AV_QUERIES; q++) {
                vb weight = vb_set1_i32((int32_t)pair_weights[q][pair]);
                for (int v = 0; v < VN; v++) acc[q][v] = vf_dot_bf16(acc[q][v], vv[v], weight);
            }
        }
        for (int q = 0; q < rows; q++) {
            vf inverse = vf_set1(1.0f / total[q]);
            for (int v = 0; v < VN; v++) vf_store_bf16(out + (size_t)q * width + (v0 + v) * 16, vf_mul(acc[q][v], inverse));
        }
    }
}

/* Whisper's encoder self-attention (every position sees every other) of one head, bfloat16 in and out: per tile
   of queries, all scores as float32 (bfloat16 dot products, float32 sums), then the softmax in float32 against
   each row's true maximum, its weights rounded to bfloat16 for the product with the values, float32 sums,
   divided by the float32 total at the end. Two passes over the keys instead of an online softmax: no rescaling
   and no horizontal reduction per block of keys, which cost as much as the products themselves.
   qkv: [length][3 * width] (q, k, v of every head side by side, as one fused projection writes them);
   out: [length][width]; keys, values: packed (see pack_keys_values); scores: ENC_QUERIES * padded floats;
   weights: ENC_QUERIES * padded bfloat16 values. */
static void encoder_attention_head(const uint16_t *qkv, int length, int width, int head, int head_dim,
                                   float scaling, uint16_t *out, uint16_t *keys, uint16_t *values, float *scores,
                                   uint16_t *weights) {
    const int stride = 3 * width, pairs = head_dim / 2, blocks = (length + ENC_KEYS - 1) / ENC_KEYS;
    const int padded = blocks * ENC_KEYS, vectors = head_dim / 16;
    pack_keys_values(qkv, length, padded, width, head, head_dim, keys, values);
    for (int q0 = 0; q0 < length; q0 += ENC_QUERIES) {
        const int queries = length - q0 < ENC_QUERIES ? length - q0 : ENC_QUERIES;
        uint32_t query_pairs[64][ENC_QUERIES];
        for (int q = 0; q < ENC_QUERIES; q++)
            for (int p = 0; p < pairs; p++) {
                const uint16_t *source = qkv + (size_t)(q0 + (q < queries ? q : 0)) * stride + head * head_dim + 2 * p;
                uint32_t both = 0;
                for (int e = 0; e < 2; e++) {
                    uint32_t bits = (uint32_t)source[e] << 16;
                    float value;
                    memcpy(&value, &bits, 4);
                    both |= (uint32_t)to_bf16(value * scaling) << (16 * e);
                }
                query_pairs[p][q] = both;
            }
        for (int block = 0; block < blocks; block++)
            for (int q0 = 0; q0 < ENC_QUERIES; q0 += ENC_SCORE_QUERIES) {
                vf score[ENC_SCORE_QUERIES][2];
                for (int q = 0; q < ENC_SCORE_QUERIES; q++) score[q][0] = score[q][1] = vf_zero();
                const uint16_t *block_keys = keys + (size_t)2 * block * pairs * 32;
                for (int p = 0; p < pairs; p++) {
                    vb k0 = vb_load(block_keys + (size_t)p * 32);
                    vb k1 = vb_load(block_keys + ((size_t)pairs + p) * 32);
                    for (int q = 0; q < ENC_SCORE_QUERIES; q++) {
                        vb qp = vb_set1_i32((int32_t)query_pairs[p][q0 + q]);
                        score[q][0] = vf_dot_bf16(score[q][0], k0, qp);
                        score[q][1] = vf_dot_bf16(score[q][1], k1, qp);
                    }
                }
                for (int q = 0; q < ENC_SCORE_QUERIES; q++) {
                    vf_store(scores + (size_t)(q0 + q) * padded + block * ENC_KEYS, score[q][0]);
                    vf_store(scores + (size_t)(q0 + q) * padded + block * ENC_KEYS + 16, score[q][1]);
                }
            }
        float total[ENC_QUERIES];
        for (int q = 0; q < queries; q++)
            total[q] = softmax_weights(scores + (size_t)q * padded, length, padded, weights + (size_t)q * padded, 1);
        for (int a0 = 0; a0 < queries; a0 += ENC_AV_QUERIES) {
            const int rows = queries - a0 < ENC_AV_QUERIES ? queries - a0 : ENC_AV_QUERIES;
            uint16_t *first = out + (size_t)(q0 + a0) * width + head * head_dim;
            const uint16_t *first_weights = weights + (size_t)a0 * padded;
            switch (vectors) { /* a constant count keeps the accumulators in registers */
            case 2: weigh_values(values, first_weights, padded, total + a0, rows, first, width, 2); break;
            case 4: weigh_values(values, first_weights, padded, total + a0, rows, first, width, 4); break;
            case 6: weigh_values(values, first_weights, padded, total + a0, rows, first, width, 6); break;
            default: weigh_values(values, first_weights, padded, total + a0, rows, first, width, 8); break;
            }
        }
    }
}

/* All heads, in parallel; scratch: threads * 2 * (length rounded up to 32) * head_dim bf16 values (the packed
   keys and values); each thread allocates its own score rows. Returns 0, -1 when the head size is not a
   multiple of 32 up to 128, -2 when out of memory. */
int encoder_attention_bf16(const uint16_t *qkv, int length, int heads, int head_dim, float scaling, uint16_t *out,
                           uint16_t *scratch, int threads) {
    if (head_dim % 32 || head_dim > 128) return -1;
    const int width = heads * head_dim, padded = (length + ENC_KEYS - 1) / ENC_KEYS * ENC_KEYS;
    const size_t per_thread = (size_t)2 * padded * head_dim;
    int failed = 0;
#pragma omp parallel num_threads(threads)
    {
        float *scores = aligned_alloc(64, (size_t)ENC_QUERIES * padded * (sizeof(float) + sizeof(uint16_t)));
        uint16_t *keys = scratch + (size_t)omp_get_thread_num() * per_thread;
#pragma omp for schedule(static)
        for (int head = 0; head < heads; head++) {
            if (scores == NULL) {
#pragma omp atomic write
                failed = 1;
                continue;
            }
            encoder_attention_head(qkv, length, width, head, head_dim, scaling, out, keys, keys + per_thread / 2,
                                   scores, (uint16_t *)(scores + (size_t)ENC_QUERIES * padded));
        }
        free(scores);
    }
    return failed ? -2 : 0;
}

/* ---------------------------------------------------------------- encoder self-attention in float32 */

/* Queries (and key or head vectors) multiplied together: what the registers hold, 12 x 2 vectors in 32 zmm registers,
   6 x 1 in 16 ymm pairs (AVX2) or 32 q quads (NEON). Each output's chain of operations is the same whatever these
   are, so every build computes the same bits. */
#if TILE_PASS == 4
#define F32_QUERIES 12
#define F32_VECTORS 2
#else
#define F32_QUERIES 6
#define F32_VECTORS 1
#endif
#define F32_TILE (2 * F32_QUERIES) /* queries whose scores over every key are kept (L2) */
#define INT8_TILE TILE_BLOCK         /* the same where the int8 forms sum on tiles: one block of tile_sums rows */
#define QUERY_TILE (F32_TILE > INT8_TILE ? F32_TILE : INT8_TILE) /* the larger, for the buffers */

/* One head's keys as [block of 16 keys][head_dim][16] and values as [key][head_dim], zero from `length` up to
   `padded`. */
static void pack_keys_values_f32(const float *qkv, int length, int padded, int width, int head, int head_dim,
                                 float *keys, float *values) {
    const int stride = 3 * width;
    for (int j = 0; j < padded; j++) {
        const float *key = qkv + (size_t)j * stride + width + head * head_dim;
        const float *value = qkv + (size_t)j * stride + 2 * width + head * head_dim;
        for (int i = 0; i < head_dim; i++) {
            keys[((size_t)(j / 16) * head_dim + i) * 16 + j % 16] = j < length ? key[i] : 0.0f;
            values[(size_t)j * head_dim + i] = j < length ? value[i] : 0.0f;
        }
    }
}

/* scores [F32_QUERIES rows from `query`][padded] of the block of F32_VECTORS * 16 keys from `block`: one chain of
   fused multiply-adds over the head's dimensions per score. */
static inline __attribute__((always_inline)) void score_keys_f32(const float *keys, int block, int head_dim,
                                                                 const float (*query)[128], float *scores,
                                                                 int padded) {
    vf acc[F32_QUERIES][F32_VECTORS];
    for (int q = 0; q < F32_QUERIES; q++)
        for (int v = 0; v < F32_VECTORS; v++) acc[q][v] = vf_zero();
    const float *first = keys + (size_t)block * head_dim * 16;
    for (int i = 0; i < head_dim; i++) {
        vf key[F32_VECTORS];
        for (int v = 0; v < F32_VECTORS; v++) key[v] = vf_load(first + ((size_t)v * head_dim + i) * 16);
        for (int q = 0; q < F32_QUERIES; q++) {
            const vf element = vf_set1(query[q][i]);
            for (int v = 0; v < F32_VECTORS; v++) acc[q][v] = vf_fma(element, key[v], acc[q][v]);
        }
    }
    for (int q = 0; q < F32_QUERIES; q++)
        for (int v = 0; v < F32_VECTORS; v++) vf_store(scores + (size_t)q * padded + (block + v) * 16, acc[q][v]);
}

/* out rows (`rows` <= F32_QUERIES of them, `width` apart) from head vector v0 on = weights [row][padded] @ values
   over the first `length` keys, each divided by its row's total: one chain of fused multiply-adds over the keys
   per output. */
static inline __attribute__((always_inline)) void weigh_values_f32(const float *values, const float *weights,
                                                                   int length, int padded, int head_dim, int v0,
                                                                   const float *total, int rows, float *out,
                                                                   int width) {
    const float *row_weights[F32_QUERIES];
    for (int q = 0; q < F32_QUERIES; q++) row_weights[q] = weights + (size_t)(q < rows ? q : 0) * padded;
    vf acc[F32_QUERIES][F32_VECTORS];
    for (int q = 0; q < F32_QUERIES; q++)
        for (int v = 0; v < F32_VECTORS; v++) acc[q][v] = vf_zero();
    for (int j = 0; j < length; j++) {
        vf value[F32_VECTORS];
        for (int v = 0; v < F32_VECTORS; v++) value[v] = vf_load(values + (size_t)j * head_dim + (v0 + v) * 16);
        for (int q = 0; q < F32_QUERIES; q++) {
            const vf weight = vf_set1(row_weights[q][j]);
            for (int v = 0; v < F32_VECTORS; v++) acc[q][v] = vf_fma(weight, value[v], acc[q][v]);
        }
    }
    for (int q = 0; q < rows; q++) {
        const vf inverse = vf_set1(1.0f / total[q]);
        for (int v = 0; v < F32_VECTORS; v++) vf_store(out + (size_t)q * width + (v0 + v) * 16, vf_mul(acc[q][v], inverse));
    }
}

/* `count` (a multiple of 16) floats times `inverse`, rounded to the nearest integer (even on ties) in int8 */
static inline void round_to_int8(const float *row, int count, vf inverse, int8_t *out) {
    for (int i = 0; i < count; i += 16) vi_store_i8(out + i, vi_round(vf_mul(vf_load(row + i), inverse)));
}

/* The head's `floats` values of the row ROWS_AHEAD rows past `row` (rows `stride` floats apart) asked for now: one
   head's keys or values are a few cache lines in each row of qkv, rows kilobytes apart, which the hardware's
   prefetchers do not follow across pages. */
#define ROWS_AHEAD 8
static inline void prefetch_row_ahead(const float *row, size_t stride, int floats) {
    for (int i = 0; i < floats; i += 16) __builtin_prefetch(row + ROWS_AHEAD * stride + i, 0, 3);
}

/* One head's keys quantized for int8 scores: each key to int8 with its own scale (its max |value| / 127), stored + 128
   as an FMT_I8_VNNI pack whose columns are the keys ([padded / 64][head_dim / 4][64][4]; zero keys from `length`). */
static void pack_keys_int8(const float *qkv, int length, int padded, int width, int head, int head_dim,
                           uint8_t *keys, float *scales) {
    const int stride = 3 * width;
    for (int j = 0; j < padded; j++) {
        const float *key = qkv + (size_t)j * stride + width + head * head_dim;
        int8_t q[128] = {0};
        float step = 1.0f;
        if (j + ROWS_AHEAD < length) prefetch_row_ahead(key, stride, head_dim);
        if (j < length) {
            vf top = vf_zero();
            for (int i = 0; i < head_dim; i += 16) top = vf_max(top, vf_abs(vf_load(key + i)));
            const float largest = vf_reduce_max(top);
            step = largest > 0.0f ? largest / 127.0f : 1.0f;
            round_to_int8(key, head_dim, vf_set1(1.0f / step), q);
        }
        scales[j] = step;
        uint8_t biased[128];
        for (int i = 0; i < head_dim; i++) biased[i] = (uint8_t)(q[i] + 128);
        uint8_t *column = keys + (size_t)(j / TILE) * (head_dim / 4) * TILE * 4 + (j % TILE) * 4;
        for (int g = 0; g < head_dim / 4; g++) memcpy(column + (size_t)g * TILE * 4, biased + 4 * g, 4);
    }
}

/* scores [R rows][padded] of R quantized queries over one tile of 64 int8 keys: exact int32 sums (`sums` made on AMX
   tiles, else vpdpbusd where the CPU has it) times the query's and the key's scales, outlier dimensions of the query
   in float32. */
static inline __attribute__((always_inline)) void score_keys_int8(const Linear *keys, int tile, QuantizedRows x,
                                                                  const int32_t *sums, float *scores, int padded,
                                                                  int R) {
    for (int c0 = 0; c0 < 4; c0 += TILE_PASS) {
        vi exact[ROW_BLOCK][TILE_PASS];
        exact_sums(keys, tile, c0, x, sums, exact, R);
        vf acc[ROW_BLOCK][TILE_PASS];
        vnni_scaled(keys, tile, c0, x, exact, acc, R);
        for (int c = 0; c < TILE_PASS; c++) {
            const int column = tile * TILE + (c0 + c) * 16;
            const vf scale = vf_load(keys->scale + column);
            for (int r = 0; r < R; r++) vf_store(scores + (size_t)r * padded + column, vf_mul(acc[r][c], scale));
        }
    }
}

static void score_tile_int8(const Linear *keys, int tile, QuantizedRows x, const int32_t *sums, int rows,
                            float *scores, int padded) {
#define BLOCK(R) score_keys_int8(keys, tile, x, sums, scores, padded, R)
    WITH_CONSTANT_ROWS(rows, BLOCK)
#undef BLOCK
}

/* One head's values quantized for the weights x values product: each channel (head dimension) to int8 with its own
   scale (its max |value| over the keys / 127), stored + 128 as an FMT_I8_VNNI pack whose columns are the channels and
   whose inputs are the keys ([head_dim / 64][padded / 4][64][4]; zero values from `length`, zero channels from
   `head_dim` up to the tile). scales: one per channel, tiles * 64 of them. */
static void pack_values_int8(const float *qkv, int length, int padded, int width, int head, int head_dim,
                             uint8_t *values, float *scales) {
    const int stride = 3 * width, columns = (head_dim + TILE - 1) / TILE * TILE;
    float inverse[128];
    vf top[8];
    for (int v = 0; v < columns / 16; v++) top[v] = vf_zero();
    for (int j = 0; j < length; j++) { /* row by row: each row's values are one cache line or two */
        const float *row = qkv + (size_t)j * stride + 2 * width + head * head_dim;
        if (j + ROWS_AHEAD < length) prefetch_row_ahead(row, stride, head_dim);
        for (int v = 0; v < head_dim / 16; v++) top[v] = vf_max(top[v], vf_abs(vf_load(row + 16 * v)));
    }
    for (int v = 0; v < columns / 16; v++) vf_store(scales + 16 * v, top[v]);
    for (int c = 0; c < columns; c++) {
        scales[c] = scales[c] > 0.0f ? scales[c] / 127.0f : 1.0f;
        inverse[c] = 1.0f / scales[c];
    }
    for (int j0 = 0; j0 < padded; j0 += 4) { /* four keys at a time: a channel's four bytes are one int32 */
        int8_t q[4][128] = {{0}};
        for (int j = j0; j < j0 + 4 && j < length; j++)
            for (int c = 0; c < head_dim; c += 16)
                round_to_int8(qkv + (size_t)j * stride + 2 * width + head * head_dim + c, 16, vf_load(inverse + c),
                              q[j - j0] + c);
        for (int c = 0; c < columns; c++) {
            const uint32_t four = (uint32_t)(uint8_t)(q[0][c] + 128) | (uint32_t)(uint8_t)(q[1][c] + 128) << 8 |
                                  (uint32_t)(uint8_t)(q[2][c] + 128) << 16 | (uint32_t)(uint8_t)(q[3][c] + 128) << 24;
            memcpy(values + ((size_t)(c / TILE) * (padded / 4) + j0 / 4) * TILE * 4 + (c % TILE) * 4, &four, 4);
        }
    }
}

/* 16383 exp(x) for x <= 0 to within 3e-6 relative (exp16 with a degree-4 polynomial, fitted for relative error on
   |r| <= ln 2 / 2, whose coefficients carry the 16383): the 14-bit weights below need no more, and their softmax
   costs as much as their product with the values */
static inline __attribute__((always_inline)) vf fixed_point_exp16(vf x) {
    x = vf_max(x, vf_set1(-80.0f));
    const vf n = vf_round(vf_mul(x, vf_set1(1.44269504088896341f)));
    vf r = vf_fnma(n, vf_set1(0.693359375f), x);
    r = vf_fnma(n, vf_set1(-2.12194440e-4f), r);
    vf p = vf_set1(16383.0f * 0.04145812f);
    p = vf_fma(p, r, vf_set1(16383.0f * 0.16790822f));
    p = vf_fma(p, r, vf_set1(16383.0f * 0.5000436f));
    p = vf_fma(p, r, vf_set1(16383.0f * 0.99996346f));
    p = vf_fma(p, r, vf_set1(16383.0f * 0.9999993f));
    return vf_scale2(p, n);
}

/* A row of scores' softmax weights e = exp(score - max) (each in [0, 1], the largest 1) as 14-bit fixed point
   w = round(16383 e) (fixed_point_exp16), zero from `length` up to `padded`, split into two int8 rows, w >> 7 and
   w & 127 (both 0..127, so any int8 product takes them), quantized as rows whose steps are 128 and 1: the two
   products' sum is the product with w. Returns the sum of w (the row's total in the same units, so that the weights
   multiplied are the ones divided by). */
static int32_t softmax_fixed_point(const float *row, int length, int padded, int8_t *high, int8_t *low,
                                   RowQuantization *high_row, RowQuantization *low_row) {
    vf top = vf_set1(-INFINITY);
    for (int k = 0; k < length; k += 16) top = vf_max_tail(top, vf_load(row + k), length - k);
    const vf shift = vf_set1(vf_reduce_max(top));
    vi total = vi_zero(), high_total = vi_zero(), low_total = vi_zero();
    for (int k = 0; k < padded; k += 16) {
        vf e = fixed_point_exp16(vf_sub(vf_load(row + k), shift));
        if (k + 16 > length) e = vf_zero_tail(e, length - k);
        const vi w = vi_round(e);
        const vi top_bits = vi_srl(w, 7), bottom_bits = vi_and(w, vi_set1(127));
        total = vi_add(total, w);
        high_total = vi_add(high_total, top_bits);
        low_total = vi_add(low_total, bottom_bits);
        vi_store_i8(high + k, top_bits);
        vi_store_i8(low + k, bottom_bits);
    }
    *high_row = (RowQuantization){.step = 128.0f, .offset = INT8_DOT_BIAS * vi_reduce_add(high_total)};
    *low_row = (RowQuantization){.step = 1.0f, .offset = INT8_DOT_BIAS * vi_reduce_add(low_total)};
    return vi_reduce_add(total);
}

/* out rows (R of them, `width` apart) of one tile of channels = the split weights' two int8 products with the packed
   values, added, times each channel's scale, divided by each row's fixed-point total. */
static inline __attribute__((always_inline)) void weigh_values_int8(const Linear *values, int tile,
                                                                    QuantizedRows high, QuantizedRows low,
                                                                    const int32_t *high_sums, const int32_t *low_sums,
                                                                    const int32_t *total, float *out, int width,
                                                                    int R) {
    for (int c0 = 0; c0 < 4; c0 += TILE_PASS) {
        if (tile * TILE + c0 * 16 >= values->n) break;
        vi exact[ROW_BLOCK][TILE_PASS];
        vf acc[ROW_BLOCK][TILE_PASS], rest[ROW_BLOCK][TILE_PASS];
        exact_sums(values, tile, c0, high, high_sums, exact, R);
        vnni_scaled(values, tile, c0, high, exact, acc, R);
        exact_sums(values, tile, c0, low, low_sums, exact, R);
        vnni_scaled(values, tile, c0, low, exact, rest, R);
        for (int c = 0; c < TILE_PASS; c++) {
            const int column = tile * TILE + (c0 + c) * 16, valid = values->n - column;
            if (valid <= 0) break;
            const vf scale = vf_load(values->scale + column);
            for (int r = 0; r < R; r++) {
                const vf inverse = vf_set1(1.0f / (float)total[r]);
                vf_store_tail(out + (size_t)r * width + column, valid,
                              vf_mul(vf_mul(vf_add(acc[r][c], rest[r][c]), scale), inverse));
            }
        }
    }
}

static void weigh_tile_int8(const Linear *values, int tile, QuantizedRows high, QuantizedRows low,
                            const int32_t *high_sums, const int32_t *low_sums, int rows, const int32_t *total,
                            float *out, int width) {
#define BLOCK(R) weigh_values_int8(values, tile, high, low, high_sums, low_sums, total, out, width, R)
    WITH_CONSTANT_ROWS(rows, BLOCK)
#undef BLOCK
}

/* encoder_attention_head in float32: the scaled queries, scores, softmax weights and sums all float32 (the same
   two passes over the keys). keys, values: padded * head_dim floats each; scores: QUERY_TILE * padded floats, the
   weights written over them. With `int8_keys` the scores are int8 products (int8_queries: QUERY_TILE * head_dim);
   with `int8_values` too the weights x values are (softmax_fixed_point's rows in weight_rows: 2 * QUERY_TILE *
   padded bytes). `sums` (3 * INT8_TILE * TILE int32, or NULL): where the int8 products' sums are made on AMX tiles. */
static void encoder_attention_head_f32(const float *qkv, int length, int width, int head, int head_dim,
                                       float scaling, float *out, float *keys, float *values, float *scores,
                                       Linear *int8_keys, int8_t *int8_queries, Linear *int8_values,
                                       int8_t *weight_rows, int32_t *sums) {
    const int stride = 3 * width, padded = int8_keys ? int8_keys->n : (length + ENC_KEYS - 1) / ENC_KEYS * ENC_KEYS;
    const int query_tile = sums ? INT8_TILE : F32_TILE; /* tile_sums takes whole blocks of queries */
    int32_t *score_sums = sums && tiles_for(head_dim) ? sums : NULL;
    int32_t *high_sums = sums && int8_values && tiles_for(padded) ? sums + INT8_TILE * TILE : NULL;
    int32_t *low_sums = high_sums ? high_sums + INT8_TILE * TILE : NULL;
    if (int8_values)
        pack_values_int8(qkv, length, padded, width, head, head_dim, (uint8_t *)int8_values->packed,
                         (float *)int8_values->scale);
    else
        pack_keys_values_f32(qkv, length, (length + ENC_KEYS - 1) / ENC_KEYS * ENC_KEYS, width, head, head_dim, keys,
                             values);
    if (int8_keys)
        pack_keys_int8(qkv, length, padded, width, head, head_dim, (uint8_t *)int8_keys->packed,
                       (float *)int8_keys->scale);
    for (int t0 = 0; t0 < length; t0 += query_tile) {
        const int queries = length - t0 < query_tile ? length - t0 : query_tile;
        float query[QUERY_TILE][128];
        for (int q = 0; q < query_tile; q++) {
            const float *source = qkv + (size_t)(t0 + (q < queries ? q : 0)) * stride + head * head_dim;
            for (int i = 0; i < head_dim; i++) query[q][i] = source[i] * scaling;
        }
        if (int8_keys) {
            RowQuantization quantized[QUERY_TILE];
            for (int q = 0; q < queries; q++)
                quantize_row(head_dim, query[q], int8_queries + (size_t)q * head_dim, quantized + q);
            for (int tile = 0; tile < int8_keys->n_tiles; tile++) {
                if (score_sums) tile_sums(int8_keys, tile, int8_queries, score_sums);
                for (int q0 = 0; q0 < queries; q0 += ROW_BLOCK) {
                    const QuantizedRows part = {int8_queries + (size_t)q0 * head_dim, quantized + q0};
                    score_tile_int8(int8_keys, tile, part, score_sums ? score_sums + (size_t)q0 * TILE : NULL,
                                    queries - q0 < ROW_BLOCK ? queries - q0 : ROW_BLOCK, scores + (size_t)q0 * padded,
                                    padded);
                }
            }
        } else {
            for (int q0 = 0; q0 < queries; q0 += F32_QUERIES)
                for (int block = 0; block < padded / 16; block += F32_VECTORS)
                    score_keys_f32(keys, block, head_dim, query + q0, scores + (size_t)q0 * padded, padded);
        }
        if (int8_values) {
            int8_t *high = weight_rows, *low = weight_rows + (size_t)QUERY_TILE * padded;
            RowQuantization high_rows[QUERY_TILE], low_rows[QUERY_TILE];
            int32_t fixed_total[QUERY_TILE];
            for (int q = 0; q < queries; q++)
                fixed_total[q] = softmax_fixed_point(scores + (size_t)q * padded, length, padded,
                                                     high + (size_t)q * padded, low + (size_t)q * padded,
                                                     high_rows + q, low_rows + q);
            for (int tile = 0; tile < int8_values->n_tiles; tile++) {
                if (high_sums) {
                    tile_sums(int8_values, tile, high, high_sums);
                    tile_sums(int8_values, tile, low, low_sums);
                }
                for (int q0 = 0; q0 < queries; q0 += ROW_BLOCK) {
                    const QuantizedRows high_part = {high + (size_t)q0 * padded, high_rows + q0};
                    const QuantizedRows low_part = {low + (size_t)q0 * padded, low_rows + q0};
                    const size_t at = (size_t)q0 * TILE;
                    weigh_tile_int8(int8_values, tile, high_part, low_part, high_sums ? high_sums + at : NULL,
                                    low_sums ? low_sums + at : NULL, queries - q0 < ROW_BLOCK ? queries - q0 : ROW_BLOCK,
                                    fixed_total + q0, out + (size_t)(t0 + q0) * width + head * head_dim, width);
                }
            }
            continue;
        }
        float total[F32_TILE];
        for (int q = 0; q < queries; q++)
            total[q] = softmax_weights(scores + (size_t)q * padded, length, padded, scores + (size_t)q * padded, 0);
        for (int q0 = 0; q0 < queries; q0 += F32_QUERIES) {
            const int rows = queries - q0 < F32_QUERIES ? queries - q0 : F32_QUERIES;
            for (int v0 = 0; v0 < head_dim / 16; v0 += F32_VECTORS)
                weigh_values_f32(values, scores + (size_t)q0 * padded, length, padded, head_dim, v0, total + q0,
                                 rows, out + (size_t)(t0 + q0) * width + head * head_dim, width);
        }
    }
}

/* encoder_attention_bf16 in float32 (qkv [length][3 * width], out [length][width]). `int8` picks how much of it is
   int8 products (VNNI's 4x the multiply-adds per instruction): 0 none; 1 the scores (each query and each key
   quantized with its own scale, the query's outlier dimensions in float32, as the int8 linear layers' rows); 2 the
   scores and the weights x values too (the softmax weights as 14-bit fixed point in two int8 halves, the values
   int8 with a scale per channel: two products instead of one, each a quarter of the float32 one's instructions).
   The rest is float32. scratch: threads * 2 * (length rounded up to 32) * head_dim floats. Returns 0, -1 when the
   head size is not a multiple of 32 up to 128 or `int8` is not 0, 1 or 2, -2 when out of memory. */
int encoder_attention_f32(const float *qkv, int length, int heads, int head_dim, float scaling, int int8,
                          float *out, float *scratch, int threads) {
    if (head_dim % 32 || head_dim > 128 || int8 < 0 || int8 > 2) return -1;
    const int width = heads * head_dim, padded = (length + ENC_KEYS - 1) / ENC_KEYS * ENC_KEYS;
    const int tiles = (length + TILE - 1) / TILE, scored = int8 ? tiles * TILE : padded;
    const int channels = (head_dim + TILE - 1) / TILE * TILE;
    const size_t per_thread = (size_t)2 * padded * head_dim;
    /* per thread, int8 bytes: the keys' pack [scored][head_dim], their scales [scored] floats, the queries'
       int8 values [QUERY_TILE][head_dim]; then with int8 == 2 the values' pack [channels][scored], their scales
       [channels] floats and the split weights [2][QUERY_TILE][scored] (zeroed: tile_sums reads whole blocks of rows,
       those past a short tile's count unused) */
    const size_t key_bytes = (size_t)scored * (head_dim + sizeof(float)) + QUERY_TILE * head_dim;
    const size_t value_bytes = int8 == 2 ? (size_t)channels * (scored + sizeof(float)) + 2 * QUERY_TILE * scored : 0;
    const int on_tiles = int8 && (tiles_for(head_dim) || tiles_for(scored));
    int failed = 0;
#pragma omp parallel num_threads(threads)
    {
        float *scores = aligned_alloc(64, (size_t)QUERY_TILE * scored * sizeof(float));
        uint8_t *bytes = int8 ? calloc(key_bytes + value_bytes, 1) : NULL;
        int32_t *sums = on_tiles ? malloc((size_t)3 * INT8_TILE * TILE * sizeof(int32_t)) : NULL;
        if (sums) tiles_begin();
        float *keys = scratch + (size_t)omp_get_thread_num() * per_thread;
        Linear int8_keys = {FMT_I8_VNNI, scored, head_dim, tiles, 0, bytes,
                            bytes ? (const float *)(bytes + (size_t)scored * head_dim) : NULL, NULL};
        int8_t *int8_queries = bytes ? (int8_t *)bytes + (size_t)scored * (head_dim + sizeof(float)) : NULL;
        uint8_t *value_pack = bytes && int8 == 2 ? bytes + key_bytes : NULL;
        Linear int8_values = {FMT_I8_VNNI, head_dim, scored, channels / TILE, 0, value_pack,
                              value_pack ? (const float *)(value_pack + (size_t)channels * scored) : NULL, NULL};
        int8_t *weight_rows = value_pack ? (int8_t *)value_pack + (size_t)channels * (scored + sizeof(float)) : NULL;
#pragma omp for schedule(static)
        for (int head = 0; head < heads; head++) {
            if (scores == NULL || (int8 && bytes == NULL) || (on_tiles && sums == NULL)) {
#pragma omp atomic write
                failed = 1;
                continue;
            }
            encoder_attention_head_f32(qkv, length, width, head, head_dim, scaling, out, keys, keys + per_thread / 2,
                                       scores, int8 ? &int8_keys : NULL, int8_queries,
                                       int8 == 2 ? &int8_values : NULL, weight_rows, sums);
        }
        if (sums) tiles_end();
        free(scores);
        free(bytes);
        free(sums);
    }
    return failed ? -2 : 0;
}

/* ---------------------------------------------------------------- the encoder's linear layers in int8 (VNNI) */

#define ENC_PANEL 48 /* rows quantized and multiplied together: their int8 values stay in L1/L2 across the tiles */
#define ENC_ROWS 4   /* rows per product block: 16 accumulators, 4 weight vectors, no spills */

/* Rows of activations in bfloat16 or float32 (the int8 encoder's two forms: bfloat16 where the CPU multiplies it
   natively, float32 elsewhere); the products are the same integers either way. */
typedef struct {
    void *base;
    int bf16; /* else float32 */
} Rows;

/* One tile's columns for R rows; `sums` ([R][64], row stride 64): their int32 sums made on AMX tiles, or NULL (made
   here by VNNI): the same integers either way. */
static inline __attribute__((always_inline)) void int8_tile(const Linear *lin, int tile, QuantizedRows x,
                                                            const int32_t *sums, Rows y, int ldy, int gelu, int R) {
    for (int c0 = 0; c0 < 4; c0 += TILE_PASS) {
        if (tile * TILE + c0 * 16 >= lin->n) break;
        vi exact[ROW_BLOCK][TILE_PASS];
        exact_sums(lin, tile, c0, x, sums, exact, R);
        vf acc[ROW_BLOCK][TILE_PASS];
        vnni_scaled(lin, tile, c0, x, exact, acc, R);
        for (int c = 0; c < TILE_PASS; c++) {
            const int column = tile * TILE + (c0 + c) * 16, valid = lin->n - column;
            if (valid <= 0) break;
            const vf scale = vf_load_tail(lin->scale + column, valid);
            const vf bias = lin->bias ? vf_load_tail(lin->bias + column, valid) : vf_zero();
            for (int r = 0; r < R; r++) {
                vf value = vf_fma(acc[r][c], scale, bias);
                if (gelu) value = gelu16(value);
                const size_t at = (size_t)r * ldy + column;
                if (y.bf16)
                    vf_store_bf16_tail((uint16_t *)y.base + at, valid, value);
                else
                    vf_store_tail((float *)y.base + at, valid, value);
            }
        }
    }
}

static void int8_tile_rows(const Linear *lin, int tile, QuantizedRows x, const int32_t *sums, int rows, Rows y,
                           int ldy, int gelu) {
#define BLOCK(R) int8_tile(lin, tile, x, sums, y, ldy, gelu, R)
    WITH_CONSTANT_ROWS(rows, BLOCK)
#undef BLOCK
}

static int linear_int8(const Linear *lin, int rows, Rows x, int ldx, Rows y, int ldy, int gelu, int threads) {
    if (lin->format != FMT_I8_VNNI) return -1;
    const int k = lin->k, on_tiles = tiles_for(k), panel_rows = on_tiles ? TILE_PANEL : ENC_PANEL;
    const int panels = (rows + panel_rows - 1) / panel_rows;
    int failed = 0;
#pragma omp parallel num_threads(threads)
    {
        float *row = malloc((size_t)k * sizeof(float));
        int8_t *values = calloc((size_t)panel_rows, (size_t)k); /* rows past a short panel's count: zeros, unused */
        RowQuantization *quantized = malloc((size_t)panel_rows * sizeof(RowQuantization));
        int32_t *sums = on_tiles ? malloc((size_t)panel_rows * TILE * sizeof(int32_t)) : NULL;
        const int ready = row != NULL && values != NULL && quantized != NULL && (sums != NULL || !on_tiles);
        if (!ready) {
#pragma omp atomic write
            failed = 1;
        }
        if (ready && on_tiles) tiles_begin();
#pragma omp for schedule(dynamic, 1)
        for (int panel = 0; panel < panels; panel++) {
            if (!ready) continue;
            const int first = panel * panel_rows, count = rows - first < panel_rows ? rows - first : panel_rows;
            for (int r = 0; r < count; r++) {
                const size_t at = (size_t)(first + r) * ldx;
                const float *source = (const float *)x.base + at;
                if (x.bf16) {
                    for (int i = 0; i < k; i += 16) vf_store(row + i, vf_load_bf16((const uint16_t *)x.base + at + i));
                    source = row;
                }
                quantize_row(k, source, values + (size_t)r * k, quantized + r);
            }
            for (int tile = 0; tile < lin->n_tiles; tile++) {
                if (on_tiles)
                    for (int r0 = 0; r0 < count; r0 += TILE_BLOCK)
                        tile_sums(lin, tile, values + (size_t)r0 * k, sums + (size_t)r0 * TILE);
                for (int r0 = 0; r0 < count; r0 += ENC_ROWS) {
                    QuantizedRows part = {values + (size_t)r0 * k, quantized + r0};
                    const size_t at = (size_t)(first + r0) * ldy;
                    Rows out = {y.bf16 ? (void *)((uint16_t *)y.base + at) : (void *)((float *)y.base + at), y.bf16};
                    int8_tile_rows(lin, tile, part, on_tiles ? sums + (size_t)r0 * TILE : NULL,
                                   count - r0 < ENC_ROWS ? count - r0 : ENC_ROWS, out, ldy, gelu);
                }
            }
        }
        if (ready && on_tiles) tiles_end();
        free(row);
        free(values);
        free(quantized);
        free(sums);
    }
    return failed ? -2 : 0;
}

/* y = x @ W^T + bias (then GELU when `gelu`), x [rows][ldx] and y [rows][ldy] in bfloat16 (linear_int8_bf16) or
   float32 (linear_int8_f32), W an FMT_I8_VNNI pack (a scale per output column): each row of x quantized to int8
   with its own scale, its outliers (above 6x its rms) multiplied in float32, as in the decoder's int8-vnni
   products. Returns 0, -1 when the weights are not FMT_I8_VNNI, -2 when out of memory. */
int linear_int8_bf16(const Linear *lin, int rows, const uint16_t *x, int ldx, uint16_t *y, int ldy, int gelu,
                     int threads) {
    return linear_int8(lin, rows, (Rows){(void *)x, 1}, ldx, (Rows){y, 1}, ldy, gelu, threads);
}

int linear_int8_f32(const Linear *lin, int rows, const float *x, int ldx, float *y, int ldy, int gelu, int threads) {
    return linear_int8(lin, rows, (Rows){(void *)x, 0}, ldx, (Rows){y, 0}, ldy, gelu, threads);
}

/* 1 where the int8 products' sums run on AMX tiles (the build has them and Linux lent them), else 0 */
int int8_tiles(void) { return tiles_permitted; }
