/* Batch-invariant CPU kernels for a transformer decoder step (written against simd.h; OpenMP where compiled with it).

Every output element is computed by one fixed sequence of float32 operations that depends only on its own
row (token): a linear layer accumulates sum_k w[k] * x[k] with one fused multiply-add per k in increasing
k order, whatever the number of rows, the tile a row lands in or the thread that computes it; attention,
softmax and layer norm reduce in a fixed order per row. So a pass over 9 tokens returns for each token the
bits a one-token pass returns: speculative verification sees exactly the numbers plain decoding sees, at
any weight precision (float32, float16, bfloat16, int8 weights are all widened to float32 in registers). Layers
in FMT_I8_VNNI quantize each row of activations on its own and sum exactly in int32, so they are batch-invariant too.

Weights are packed as [ceil(n / 64)][k][64] (64 output columns per tile, zero-padded), so one tile streams
contiguously and a step reads each weight once for all its rows (memory speed for a few rows).
*/
#include "kernels.h"

_Thread_local Claim *claims_here;
_Thread_local int claims_walked, claims_count;

/* Column vectors of a tile accumulated together for R rows: TILE_PASS for a full row block; where a SIMD layer's
   registers hold one column vector per row (AVX2, NEON), fewer rows take more columns, as many as fit. A one-token
   step there otherwise ran two chains of FMAs, each waiting for the last (Zen 3: ~4.5 cycles per 16 products, the
   decoder's products at half the memory's speed). Each column's sum is the same chain of FMAs in k order either
   way: the bits do not change, only how many independent chains run side by side. */
#define MAX_PASS 4
#define PASS_FOR(R) (TILE_PASS >= MAX_PASS || (R) > 2 ? TILE_PASS : MAX_PASS / (R))

static inline __attribute__((always_inline)) void tile_block(const Linear *lin, int tile, const float *x, int ldx,
                                                             int rows, float *y, int ldy, int epilogue,
                                                             float factor, int format, int R) {
    const int k_total = lin->k, pass = PASS_FOR(R);
    const size_t bytes = format_bytes(format);
    const void *w = (const char *)lin->packed + (size_t)tile * k_total * TILE * bytes;
    for (int c0 = 0; c0 < 4; c0 += pass) {
        if (tile * TILE + c0 * 16 >= lin->n) break;
        vf acc[ROW_BLOCK][MAX_PASS];
        for (int r = 0; r < R; r++)
            for (int c = 0; c < pass; c++) acc[r][c] = vf_zero();
        for (int k = 0; k < k_total; k++) {
            prefetch_ahead((const char *)w + ((size_t)k * TILE + c0 * 16) * bytes, pass * 16 * bytes);
            vf weights[MAX_PASS];
            for (int c = 0; c < pass; c++) weights[c] = load16(w, (size_t)k * TILE + (c0 + c) * 16, format);
            for (int r = 0; r < R; r++) {
                vf xb = vf_set1(x[(size_t)r * ldx + k]);
                for (int c = 0; c < pass; c++) acc[r][c] = vf_fma(weights[c], xb, acc[r][c]);
            }
        }
#if TILE_PASS >= MAX_PASS /* acc itself: the wide layers' build compiles to the instructions it had before */
        finish_tile(lin, tile, c0, acc, R, y, ldy, epilogue, factor);
#else
        for (int first = 0; first < pass; first += TILE_PASS) {
            vf part[ROW_BLOCK][TILE_PASS];
            for (int r = 0; r < R; r++)
                for (int c = 0; c < TILE_PASS; c++) part[r][c] = acc[r][first + c];
            finish_tile(lin, tile, c0 + first, part, R, y, ldy, epilogue, factor);
        }
#endif
    }
    (void)rows;
}

/* Float32 activations (R rows, `ldx` apart) times an FMT_I8_VNNI tile (FMT_I8_VNNI_FLOAT reads one so): each
   column's sum is tile_block's for an FMT_I8 pack of the same values, the same chain of FMAs in k order (a byte
   + 128 less 128 is the int8 value, exactly, in float32) and the same finish, so the same bits. */
static inline __attribute__((always_inline)) void vnni_tile_float(const Linear *lin, int tile, const float *x,
                                                                  int ldx, float *y, int ldy, int epilogue,
                                                                  float factor, int R) {
    const int k = lin->k, pass = PASS_FOR(R);
    const uint8_t *w = (const uint8_t *)lin->packed + (size_t)tile * k * TILE;
    const vi low = vi_set1(0xff), middle = vi_set1(128);
    for (int c0 = 0; c0 < 4; c0 += pass) {
        if (tile * TILE + c0 * 16 >= lin->n) break;
        vf acc[ROW_BLOCK][MAX_PASS];
        for (int r = 0; r < R; r++)
            for (int c = 0; c < pass; c++) acc[r][c] = vf_zero();
        for (int g = 0; g < k / 4; g++) {
            prefetch_ahead(w + ((size_t)g * TILE + c0 * 16) * 4, pass * 64);
            for (int c = 0; c < pass; c++) {
                vi bytes = vi_load(w + (size_t)g * TILE * 4 + 64 * (c0 + c));
                for (int j = 0; j < 4; j++) {
                    vf weight = vf_from_vi(vi_sub(vi_and(vi_srl(bytes, 8 * j), low), middle));
                    for (int r = 0; r < R; r++)
                        acc[r][c] = vf_fma(weight, vf_set1(x[(size_t)r * ldx + 4 * g + j]), acc[r][c]);
                }
            }
        }
        for (int first = 0; first < pass; first += TILE_PASS) {
            vf part[ROW_BLOCK][TILE_PASS];
            for (int r = 0; r < R; r++)
                for (int c = 0; c < TILE_PASS; c++) part[r][c] = acc[r][first + c];
            finish_tile(lin, tile, c0 + first, part, R, y, ldy, epilogue, factor);
        }
    }
}

static void vnni_tile_float_rows(const Linear *lin, int tile, const float *x, int ldx, float *y, int ldy, int rows,
                                 int epilogue, float factor) {
#define BLOCK(R) vnni_tile_float(lin, tile, x, ldx, y, ldy, epilogue, factor, R)
    WITH_CONSTANT_ROWS(rows, BLOCK)
#undef BLOCK
}

#define FORMAT_CASES(R)                                                                                  \
    switch (lin->format) {                                                                               \
    case FMT_F32: tile_block(lin, tile, x, ldx, R, y, ldy, epilogue, factor, FMT_F32, R); break;        \
    case FMT_F16: tile_block(lin, tile, x, ldx, R, y, ldy, epilogue, factor, FMT_F16, R); break;        \
    case FMT_BF16: tile_block(lin, tile, x, ldx, R, y, ldy, epilogue, factor, FMT_BF16, R); break;      \
    default: tile_block(lin, tile, x, ldx, R, y, ldy, epilogue, factor, FMT_I8, R); break;              \
    }

static void tile_rows(const Linear *lin, int tile, const float *x, int ldx, int rows, float *y, int ldy,
                      int epilogue, float factor) {
    if (lin->format == FMT_I8_VNNI_FLOAT) {
        vnni_tile_float_rows(lin, tile, x, ldx, y, ldy, rows, epilogue, factor);
        return;
    }
    WITH_CONSTANT_ROWS(rows, FORMAT_CASES)
}


static inline __attribute__((always_inline)) void tile_block_vnni(const Linear *lin, int tile, QuantizedRows x,
                                                                  float *y, int ldy, int epilogue, float factor,
                                                                  int R) {
    for (int c0 = 0; c0 < 4; c0 += TILE_PASS) {
        if (tile * TILE + c0 * 16 >= lin->n) break;
        vf acc[ROW_BLOCK][TILE_PASS];
        vnni_accumulate(lin, tile, c0, x, acc, R);
        finish_tile(lin, tile, c0, acc, R, y, ldy, epilogue, factor);
    }
}

static void tile_rows_vnni(const Linear *lin, int tile, QuantizedRows x, int rows, float *y, int ldy,
                                int epilogue, float factor) {
#define BLOCK(R) tile_block_vnni(lin, tile, x, y, ldy, epilogue, factor, R)
    WITH_CONSTANT_ROWS(rows, BLOCK)
#undef BLOCK
}

/* linear_rows for FMT_I8_VNNI: every thread quantizes the rows (cheap next to the product), then the tiles are
   shared out. */
static void linear_rows_vnni(const Linear *lin, int rows, const float *x, int ldx, float *y, int ldy, int epilogue,
                             float factor) {
    const int k = lin->k;
    RowQuantization *quantized = malloc((size_t)rows * (sizeof(RowQuantization) + k));
    if (quantized == NULL) { /* a few kilobytes: no answer rather than a wrong one (the certified argmax reads these) */
        fputs("asr_specdec native kernels: out of memory\n", stderr);
        abort();
    }
    int8_t *values = (int8_t *)(quantized + rows);
    for (int r = 0; r < rows; r++) quantize_row(k, x + (size_t)r * ldx, values + (size_t)r * k, quantized + r);
    ClaimLoop tiles = claim_loop(lin->n_tiles);
    for (int tile; (tile = claim(&tiles)) >= 0;) {
        for (int r0 = 0; r0 < rows; r0 += ROW_BLOCK) {
            int block = rows - r0 < ROW_BLOCK ? rows - r0 : ROW_BLOCK;
            QuantizedRows part = {values + (size_t)r0 * k, quantized + r0};
            tile_rows_vnni(lin, tile, part, block, y + (size_t)r0 * ldy, ldy, epilogue, factor);
        }
    }
    free(quantized);
}

void linear_rows(const Linear *lin, int rows, const float *x, int ldx, float *y, int ldy, int epilogue,
                        float factor) {
    if (lin->format == FMT_I8_VNNI) {
        linear_rows_vnni(lin, rows, x, ldx, y, ldy, epilogue, factor);
        return;
    }
    if (lin->format == FMT_I4_VNNI) {
        linear_rows_int4(lin, rows, x, ldx, y, ldy, epilogue, factor);
        return;
    }
    ClaimLoop tiles = claim_loop(lin->n_tiles);
    for (int tile; (tile = claim(&tiles)) >= 0;) {
        for (int r0 = 0; r0 < rows; r0 += ROW_BLOCK) {
            int block = rows - r0 < ROW_BLOCK ? rows - r0 : ROW_BLOCK;
            tile_rows(lin, tile, x + (size_t)r0 * ldx, ldx, block, y + (size_t)r0 * ldy, ldy, epilogue, factor);
        }
    }
}

/* ---------------------------------------------------------------- layer norm, attention */

static inline float sum16(vf v) { return vf_reduce_add(v); }

static void layer_norm_rows(int rows, int d, const float *x, const float *w, const float *b, float eps, float *y) {
    ClaimLoop items = claim_loop(rows);
    for (int t; (t = claim(&items)) >= 0;) {
        const float *row = x + (size_t)t * d;
        vf total = vf_zero();
        for (int i = 0; i < d; i += 16) total = vf_add(total, vf_load(row + i));
        vf mean = vf_set1(sum16(total) / (float)d);
        vf squares = vf_zero();
        for (int i = 0; i < d; i += 16) {
            vf centered = vf_sub(vf_load(row + i), mean);
            squares = vf_fma(centered, centered, squares);
        }
        vf inv = vf_set1(1.0f / sqrtf(sum16(squares) / (float)d + eps));
        float *out = y + (size_t)t * d;
        for (int i = 0; i < d; i += 16) {
            vf normed = vf_mul(vf_sub(vf_load(row + i), mean), inv);
            vf_store(out + i, vf_fma(normed, vf_load(w + i), vf_load(b + i)));
        }
    }
}

/* Scores of Q queries (one row, one head) against the CH key chunks from `chunk` (16 keys each); keys_t holds
   blocks of 16 keys transposed, [chunk][head_dim][16] (float32 or bfloat16). Each score is one chain of fused
   multiply-adds over head_dim, whichever chunks and queries share the loop (several chains hide the FMA latency). */
static inline __attribute__((always_inline)) void score_chunks(int chunk, const float *const *query, int head_dim,
                                                               const void *keys_t, int kv_format, float *scores,
                                                               int key_stride, int Q, int CH) {
    vf acc[QUERY_BLOCK][SCORE_CHUNKS];
    for (int q = 0; q < Q; q++)
        for (int c = 0; c < CH; c++) acc[q][c] = vf_zero();
    const size_t bytes = format_bytes(kv_format), step_bytes = (size_t)CH * 16 * bytes;
    const char *next_block = (const char *)keys_t + (size_t)(chunk + CH) * head_dim * 16 * bytes;
    for (int i = 0; i < head_dim; i++) {
        for (size_t line = 0; line < step_bytes; line += 64) /* the next block's keys, a slice per i */
            __builtin_prefetch(next_block + i * step_bytes + line, 0, 3);
        vf key[SCORE_CHUNKS];
        for (int c = 0; c < CH; c++)
            key[c] = load16(keys_t, ((size_t)(chunk + c) * head_dim + i) * 16, kv_format);
        for (int q = 0; q < Q; q++) {
            vf value = vf_set1(query[q][i]);
            for (int c = 0; c < CH; c++) acc[q][c] = vf_fma(value, key[c], acc[q][c]);
        }
    }
    for (int q = 0; q < Q; q++)
        for (int c = 0; c < CH; c++) vf_store(scores + (size_t)q * key_stride + (chunk + c) * 16, acc[q][c]);
}

/* A query for int8 keys (FMT_I8): its head_dim values as int8 q / step (one step for the vector, its max |q| / 127),
   four to an int32 in dim order, and the INT8_DOT_BIAS * sum(q) that the keys' stored + 128 adds to each sum. */
typedef struct {
    int32_t four[MAX_HEAD_VECTORS * 4];
    float step;
    int32_t offset;
} QueryInt8;

static void quantize_query(const float *query, int head_dim, QueryInt8 *out) {
    int8_t values[MAX_HEAD_VECTORS * 16];
    out->step = quantize_vector(query, FMT_F32, head_dim, values);
    int32_t total = 0;
    for (int i = 0; i < head_dim; i++) total += values[i];
    memcpy(out->four, values, (size_t)head_dim);
    out->offset = INT8_DOT_BIAS * total;
}

/* The same scores against int8 keys: blocks of 16 keys as [chunk][head_dim / 4][16][4] bytes of k + 128 (see
   quantize_int8_vectors), each key with its own scale. A score is the exact int32 sum of the quantized query's
   products with the key (four a lane per vi_dot_weights, as the int8 linear layers), then scaled by the query's
   step and the key's scale: a quarter of the instructions of float32 products. */
static inline __attribute__((always_inline)) void score_chunks_int8(int chunk, const QueryInt8 *query, int head_dim,
                                                                    const uint8_t *keys, const float *key_scales,
                                                                    float *scores, int key_stride, int Q, int CH) {
    vi acc[QUERY_BLOCK][SCORE_CHUNKS];
    for (int q = 0; q < Q; q++)
        for (int c = 0; c < CH; c++) acc[q][c] = vi_zero();
    const size_t block_bytes = (size_t)head_dim * 16;
    const uint8_t *next_block = keys + (size_t)(chunk + CH) * block_bytes;
    for (int g = 0; g < head_dim / 4; g++) {
        for (int c = 0; c < CH; c++) __builtin_prefetch(next_block + c * block_bytes + (size_t)g * 64, 0, 3);
        vb key[SCORE_CHUNKS];
        for (int c = 0; c < CH; c++) key[c] = vb_load(keys + (chunk + c) * block_bytes + (size_t)g * 64);
        for (int q = 0; q < Q; q++) {
            vb four = vb_set1_i32(query[q].four[g]);
            for (int c = 0; c < CH; c++) acc[q][c] = vi_dot_weights(acc[q][c], key[c], four);
        }
    }
    for (int c = 0; c < CH; c++) {
        vf scale = vf_load(key_scales + (chunk + c) * 16);
        for (int q = 0; q < Q; q++) {
            vf sum = vf_from_vi(vi_sub(acc[q][c], vi_set1(query[q].offset)));
            vf_store(scores + (size_t)q * key_stride + (chunk + c) * 16, vf_mul(vf_mul(sum, vf_set1(query[q].step)), scale));
        }
    }
}

/* how many key chunks (head vectors) Q queries take together: at most MOST (the SIMD layer's SCORE_CHUNKS or
   WEIGH_VECTORS), within SUM_REGISTERS */
#define SUMS_FOR(Q, MOST) (SUM_REGISTERS / (Q) < (MOST) ? SUM_REGISTERS / (Q) : (MOST))

/* kv_format is a constant at every call: one of the two scorers is compiled in */
static inline __attribute__((always_inline)) void score_block(int chunks, const float *const *query,
                                                              const QueryInt8 *quantized, int head_dim,
                                                              const void *keys_t, int kv_format,
                                                              const float *key_scales, float *scores,
                                                              int key_stride, int Q) {
    const int CH = SUMS_FOR(Q, SCORE_CHUNKS);
    int chunk = 0;
    if (kv_format == FMT_I8) {
        for (; chunk + CH <= chunks; chunk += CH)
            score_chunks_int8(chunk, quantized, head_dim, keys_t, key_scales, scores, key_stride, Q, CH);
        for (; chunk < chunks; chunk++)
            score_chunks_int8(chunk, quantized, head_dim, keys_t, key_scales, scores, key_stride, Q, 1);
        return;
    }
    for (; chunk + CH <= chunks; chunk += CH)
        score_chunks(chunk, query, head_dim, keys_t, kv_format, scores, key_stride, Q, CH);
    for (; chunk < chunks; chunk++)
        score_chunks(chunk, query, head_dim, keys_t, kv_format, scores, key_stride, Q, 1);
}

/* Calls PASS(N) with N the compile-time constant equal to `vectors` (1 to MOST, itself a constant): the head vectors
   of one pass over the keys, so that its sums stay in registers whichever head_dim the model has. */
#define WITH_CONSTANT_VECTORS(vectors, MOST, PASS)                                                           \
    switch (vectors) {                                                                                       \
    case 1: PASS(1); break;                                                                                  \
    case 2: if (2 <= (MOST)) PASS(2); break;                                                                 \
    case 3: if (3 <= (MOST)) PASS(3); break;                                                                 \
    case 4: if (4 <= (MOST)) PASS(4); break;                                                                 \
    case 5: if (5 <= (MOST)) PASS(5); break;                                                                 \
    case 6: if (6 <= (MOST)) PASS(6); break;                                                                 \
    case 7: if (7 <= (MOST)) PASS(7); break;                                                                 \
    default: if (8 <= (MOST)) PASS(8); break;                                                                \
    }

/* out[q] (head vectors v0..v0+VN-1) = sum_j p[q][j] * values[j] over j < lengths[q], one chain of fused
   multiply-adds per element in j order */
static inline __attribute__((always_inline)) void weigh_pass(int longest, const int *lengths, const float *scores,
                                                             int key_stride, const void *values, int kv_format,
                                                             float *const *out, int Q, int HV, int v0, int VN) {
    vf acc[QUERY_BLOCK][WEIGH_VECTORS];
    for (int q = 0; q < Q; q++)
        for (int v = 0; v < VN; v++) acc[q][v] = vf_zero();
    int shortest = longest;
    for (int q = 0; q < Q; q++) shortest = lengths[q] < shortest ? lengths[q] : shortest;
    for (int j = 0; j < shortest; j++) { /* every query weighs these (all of cross-attention's keys) */
        vf value[WEIGH_VECTORS];
        for (int v = 0; v < VN; v++) value[v] = load16(values, (size_t)j * HV * 16 + (v0 + v) * 16, kv_format);
        for (int q = 0; q < Q; q++) {
            vf p = vf_set1(scores[(size_t)q * key_stride + j]);
            for (int v = 0; v < VN; v++) acc[q][v] = vf_fma(p, value[v], acc[q][v]);
        }
    }
    for (int j = shortest; j < longest; j++) {
        vf value[WEIGH_VECTORS];
        for (int v = 0; v < VN; v++) value[v] = load16(values, (size_t)j * HV * 16 + (v0 + v) * 16, kv_format);
        for (int q = 0; q < Q; q++) {
            if (j >= lengths[q]) continue;
            vf p = vf_set1(scores[(size_t)q * key_stride + j]);
            for (int v = 0; v < VN; v++) acc[q][v] = vf_fma(p, value[v], acc[q][v]);
        }
    }
    for (int q = 0; q < Q; q++)
        for (int v = 0; v < VN; v++) vf_store(out[q] + (v0 + v) * 16, acc[q][v]);
}

/* out[q] = sum_j p[q][j] * values[j] over j < lengths[q]: HV head vectors, as many a pass as the registers hold */
static inline __attribute__((always_inline)) void weigh_block(int longest, const int *lengths, const float *scores,
                                                              int key_stride, const void *values, int kv_format,
                                                              float *const *out, int Q, int HV) {
    const int VECTORS = SUMS_FOR(Q, WEIGH_VECTORS);
    for (int v0 = 0; v0 < HV; v0 += VECTORS) {
#define WEIGH_PASS(N) weigh_pass(longest, lengths, scores, key_stride, values, kv_format, out, Q, HV, v0, N)
        WITH_CONSTANT_VECTORS(HV - v0 < VECTORS ? HV - v0 : VECTORS, VECTORS, WEIGH_PASS)
#undef WEIGH_PASS
    }
}

/* A row of softmax weights (already times the values' scales, zero from `length` up to the next 16) as int16 for
   weigh_block_int8, zero up to `padded`; returns their step. The step keeps every weight within 15 bits and the
   sum of all weights times the largest int8 value (127) within an int32, so the products' sums are exact. */
static float pair_weights(const float *weights, int length, int padded, int16_t *out) {
    const int own = (length + 15) / 16 * 16;
    vf largest = vf_zero(), total = vf_zero();
    for (int j = 0; j < own; j += 16) {
        vf w = vf_load(weights + j);
        largest = vf_max(largest, w);
        total = vf_add(total, w);
    }
    const float top = vf_reduce_max(largest), sum = vf_reduce_add(total);
    float step = top / 32767.0f > sum / 16.0e6f ? top / 32767.0f : sum / 16.0e6f;
    step = step > 0.0f ? step : 1.0f;
    const vf inverse = vf_set1(1.0f / step);
    for (int j = 0; j < own; j += 16)
        vi_store_i16(out + j, vi_max(vi_min(vi_round(vf_mul(vf_load(weights + j), inverse)), vi_set1(32767)),
                                     vi_zero())); /* (a NaN weight rounds to INT_MIN: 0 on every build) */
    for (int j = own; j < padded; j++) out[j] = 0;
    return step;
}

static const int8_t zero_values[MAX_HEAD_VECTORS * 16];

/* out[q] = sum_j w[q][j] * values[j] for int8 values (one row of head_dim per key), the weights as pair_weights
   made them: two keys at a time, their values widened to int16 pairs, summed exactly in int32 (vi_dot_pairs), then
   times the weights' step. Half the instructions of float32 products, which are what a verification's queries
   cost beyond one query's reading of the values. */
static inline __attribute__((always_inline)) void weigh_pass_int8(int longest, const int16_t *weights,
                                                                  const float *steps, int key_stride,
                                                                  const int8_t *values, float *const *out, int Q,
                                                                  int head_dim, int v0, int VN) {
    vi acc[QUERY_BLOCK][WEIGH_VECTORS];
    for (int q = 0; q < Q; q++)
        for (int v = 0; v < VN; v++) acc[q][v] = vi_zero();
    for (int j = 0; j < longest; j += 2) {
        const int8_t *first = values + (size_t)j * head_dim;
        const int8_t *second = j + 1 < longest ? first + head_dim : zero_values; /* its weight is 0 */
        vb value[WEIGH_VECTORS];
        for (int v = 0; v < VN; v++) value[v] = vb_pairs_i8(first + (v0 + v) * 16, second + (v0 + v) * 16);
        for (int q = 0; q < Q; q++) {
            int32_t two;
            memcpy(&two, weights + (size_t)q * key_stride + j, 4);
            vb both = vb_set1_i32(two);
            for (int v = 0; v < VN; v++) acc[q][v] = vi_dot_pairs(acc[q][v], value[v], both);
        }
    }
    for (int q = 0; q < Q; q++)
        for (int v = 0; v < VN; v++)
            vf_store(out[q] + (v0 + v) * 16, vf_mul(vf_from_vi(acc[q][v]), vf_set1(steps[q])));
}

/* the same for HV head vectors, as many a pass as the registers hold */
static inline __attribute__((always_inline)) void weigh_block_int8(int longest, const int16_t *weights,
                                                                   const float *steps, int key_stride,
                                                                   const int8_t *values, float *const *out, int Q,
                                                                   int HV) {
    const int VECTORS = SUMS_FOR(Q, WEIGH_VECTORS);
    for (int v0 = 0; v0 < HV; v0 += VECTORS) {
#define WEIGH_PASS(N) weigh_pass_int8(longest, weights, steps, key_stride, values, out, Q, HV * 16, v0, N)
        WITH_CONSTANT_VECTORS(HV - v0 < VECTORS ? HV - v0 : VECTORS, VECTORS, WEIGH_PASS)
#undef WEIGH_PASS
    }
}

#define SCORE_CASE(Q)                                                                                        \
    case Q:                                                                                                  \
        if (kv_format == FMT_F32)                                                                            \
            score_block(chunks, query, NULL, head_dim, keys_t, FMT_F32, NULL, scores, key_stride, Q);         \
        else if (kv_format == FMT_BF16)                                                                      \
            score_block(chunks, query, NULL, head_dim, keys_t, FMT_BF16, NULL, scores, key_stride, Q);        \
        else                                                                                                 \
            score_block(chunks, query, quantized, head_dim, keys_t, FMT_I8, key_scales, scores, key_stride, Q); \
        break;

#define WEIGH_CASE(Q)                                                                                        \
    case Q:                                                                                                  \
        if (kv_format == FMT_F32)                                                                            \
            weigh_block(longest, lengths, scores, key_stride, values, FMT_F32, out, Q, head_dim / 16);        \
        else if (kv_format == FMT_BF16)                                                                      \
            weigh_block(longest, lengths, scores, key_stride, values, FMT_BF16, out, Q, head_dim / 16);       \
        else                                                                                                 \
            weigh_block_int8(longest, pairs, steps, key_stride, values, out, Q, head_dim / 16);              \
        break;

/* Attention of up to QUERY_BLOCK queries (one row, one head) over keys 0..lengths[q]-1.
   scores: QUERY_BLOCK * key_stride floats of scratch. int8 keys and values carry a scale per key and per value
   (NULL otherwise): the values' scales multiply the softmax weights. */
static void attend_block(int queries, const float *const *query, const int *lengths, int head_dim,
                         const void *keys_t, int key_stride, const void *values, int kv_format,
                         const float *key_scales, const float *value_scales, float *scores, int16_t *pairs,
                         float *const *out) {
    int longest = 0;
    for (int q = 0; q < queries; q++) longest = lengths[q] > longest ? lengths[q] : longest;
    int chunks = (longest + 15) / 16;
    QueryInt8 quantized[QUERY_BLOCK];
    float steps[QUERY_BLOCK];
    if (kv_format == FMT_I8)
        for (int q = 0; q < queries; q++) quantize_query(query[q], head_dim, quantized + q);
    switch (queries) {
        SCORE_CASE(1)
        SCORE_CASE(2)
        SCORE_CASE(3)
#if QUERY_BLOCK > 4
        SCORE_CASE(4)
        SCORE_CASE(5)
        SCORE_CASE(6)
        SCORE_CASE(7)
        default:
        SCORE_CASE(8)
#else
        default:
        SCORE_CASE(4)
#endif
    }
    for (int q = 0; q < queries; q++) {
        float *row = scores + (size_t)q * key_stride;
        int length = lengths[q], own_chunks = (length + 15) / 16;
        vf best = vf_set1(-INFINITY);
        for (int chunk = 0; chunk < own_chunks; chunk++)
            best = vf_max_tail(best, vf_load(row + chunk * 16), length - chunk * 16);
        vf top = vf_set1(vf_reduce_max(best));
        vf total = vf_zero();
        for (int chunk = 0; chunk < own_chunks; chunk++) {
            vf e = vf_zero_tail(exp16(vf_sub(vf_load(row + chunk * 16), top)), length - chunk * 16);
            vf_store(row + chunk * 16, e);
            total = vf_add(total, e);
        }
        vf sum = vf_set1(sum16(total));
        for (int chunk = 0; chunk < own_chunks; chunk++) {
            vf weight = vf_div(vf_load(row + chunk * 16), sum);
            if (value_scales)
                weight = vf_mul(weight, vf_load_tail(value_scales + chunk * 16, length - chunk * 16));
            vf_store(row + chunk * 16, weight);
        }
        if (kv_format == FMT_I8) steps[q] = pair_weights(row, length, (longest + 1) / 2 * 2, pairs + (size_t)q * key_stride);
    }
    switch (queries) {
        WEIGH_CASE(1)
        WEIGH_CASE(2)
        WEIGH_CASE(3)
#if QUERY_BLOCK > 4
        WEIGH_CASE(4)
        WEIGH_CASE(5)
        WEIGH_CASE(6)
        WEIGH_CASE(7)
        default:
        WEIGH_CASE(8)
#else
        default:
        WEIGH_CASE(4)
#endif
    }
}

static size_t kv_size(int format) { return format_bytes(format); }

/* a thread's attention scratch: QUERY_BLOCK rows of scores, then as many of their int16 weights (int8 values) */
#define ATTENTION_FLOATS(score_stride) ((size_t)QUERY_BLOCK * (score_stride) * 3 / 2)

/* one token group = consecutive tokens of one batch row (self-attention) or of rows that read the same cross states
   (cross-attention, `row` then being the cross states' row) */
typedef struct {
    int begin, end, row;
} Group;

static void attention(const Model *m, const Cache *c, int layer, int cross, int groups_n, const Group *groups,
                      const float *q_base, int q_stride, const int *limits, float *out, float *scores_all,
                      int score_stride) {
    const int heads = m->heads, head_dim = m->head_dim;
    const int format = cross ? c->cross_format : c->kv_format;
    const size_t kvs = kv_size(format);
    ClaimLoop items = claim_loop(groups_n * heads);
    for (int item; (item = claim(&items)) >= 0;) {
        const Group *g = &groups[item / heads];
        int head = item % heads;
        float *scores = scores_all + (size_t)omp_get_thread_num() * ATTENTION_FLOATS(score_stride);
        int16_t *pairs = (int16_t *)(scores + (size_t)QUERY_BLOCK * score_stride);
        const char *keys, *values;
        const float *key_scales = NULL, *value_scales = NULL;
        int key_stride;
        if (cross) {
            keys = (const char *)c->cross_k[layer] + ((size_t)g->row * heads + head) * head_dim * c->enc_pad * kvs;
            values = (const char *)c->cross_v[layer] + ((size_t)g->row * heads + head) * c->enc_len * head_dim * kvs;
            key_stride = c->enc_pad;
            if (format == FMT_I8) {
                key_scales = c->cross_k_scale[layer] + ((size_t)g->row * heads + head) * c->enc_pad;
                value_scales = c->cross_v_scale[layer] + ((size_t)g->row * heads + head) * c->enc_len;
            }
        } else {
            keys = (const char *)c->self_k[layer] + ((size_t)g->row * heads + head) * head_dim * c->slots * kvs;
            values = (const char *)c->self_v[layer] + ((size_t)g->row * heads + head) * c->slots * head_dim * kvs;
            key_stride = c->slots;
        }
        /* blocks of about equal size (9 queries: 5 and 4, not 8 and 1): the bits are the same either way */
        int blocks = (g->end - g->begin + QUERY_BLOCK - 1) / QUERY_BLOCK;
        for (int t0 = g->begin, queries; t0 < g->end; t0 += queries, blocks--) {
            queries = (g->end - t0 + blocks - 1) / blocks;
            const float *query[QUERY_BLOCK];
            float *outs[QUERY_BLOCK];
            int lengths[QUERY_BLOCK];
            for (int q = 0; q < queries; q++) {
                query[q] = q_base + (size_t)(t0 + q) * q_stride + head * head_dim;
                outs[q] = out + (size_t)(t0 + q) * m->d + head * head_dim;
                lengths[q] = cross ? c->enc_len : limits[t0 + q] + 1;
            }
            attend_block(queries, query, lengths, head_dim, keys, key_stride, values, format, key_scales, value_scales,
                         scores, pairs, outs);
        }
    }
}

/* ---------------------------------------------------------------- the decoder pass */

/* Runs of consecutive tokens with the same key (rows[t], or row_map[rows[t]] when row_map is given) as groups;
   returns how many. */
static int group_tokens(int tokens, const int32_t *rows, const int32_t *row_map, Group *groups) {
    int groups_n = 0;
    for (int t = 0; t < tokens; t++) {
        int key = row_map ? row_map[rows[t]] : rows[t];
        if (groups_n == 0 || key != groups[groups_n - 1].row) {
            groups[groups_n].begin = t;
            groups[groups_n].row = key;
            groups_n++;
        }
        groups[groups_n - 1].end = t + 1;
    }
    return groups_n;
}

/* the claimable loops of a decoder pass: the embedding, 12 a layer (see decoder_pass), the final layer norm */
#define DECODER_PASS_LOOPS(layers) (2 + 12 * (layers))

size_t scratch_floats(const Model *m, const Cache *c, int tokens, int threads) {
    int wide = 3 * m->d > m->ffn ? 3 * m->d : m->ffn;
    int score_stride = c->slots > c->enc_pad ? c->slots : c->enc_pad;
    return (size_t)tokens * (3 * (size_t)m->d + wide) + (size_t)threads * ATTENTION_FLOATS(score_stride) +
           6 * (size_t)tokens; /* the token groups of self- and of cross-attention */
}

/* Feed `tokens` tokens (sorted by batch row): token t is ids[t] at position positions[t] of batch row rows[t];
   its keys/values go to cache slot slots[t] and it attends slots 0..limits[t]. Writes the final layer norm's
   output [tokens, d] to `hidden`. */
int decoder_pass(const Model *m, const Cache *c, int tokens, const int32_t *ids, const int32_t *rows,
                 const int32_t *positions, const int32_t *slots, const int32_t *limits, float *hidden,
                 float *scratch, int threads) {
    const int d = m->d, heads = m->heads, head_dim = m->head_dim;
    int wide = 3 * d > m->ffn ? 3 * d : m->ffn;
    float *h = scratch, *normed = h + (size_t)tokens * d, *attended = normed + (size_t)tokens * d;
    float *big = attended + (size_t)tokens * d;
    float *scores = big + (size_t)tokens * wide;
    int score_stride = c->slots > c->enc_pad ? c->slots : c->enc_pad;
    Group *groups = (Group *)(scores + (size_t)threads * ATTENTION_FLOATS(score_stride));
    Group *cross_groups = groups + tokens;
    int groups_n = group_tokens(tokens, rows, NULL, groups);
    /* cross-attention groups run over rows that read the same cross states: a query's numbers do not depend on
       which queries share its block, so this only saves reading the states once per row */
    int cross_groups_n = group_tokens(tokens, rows, c->cross_rows, cross_groups);
    Claims claims = claims_make(DECODER_PASS_LOOPS(m->n_layers));
#pragma omp parallel num_threads(threads)
    {
        claims_join(&claims);
        ClaimLoop embedded = claim_loop(tokens);
        for (int t; (t = claim(&embedded)) >= 0;) {
            const float *token = m->embed + (size_t)ids[t] * d, *position = m->positions + (size_t)positions[t] * d;
            for (int i = 0; i < d; i += 16) vf_store(h + (size_t)t * d + i, vf_add(vf_load(token + i), vf_load(position + i)));
        }
        for (int l = 0; l < m->n_layers; l++) {
            const Layer *layer = &m->layers[l];
            layer_norm_rows(tokens, d, h, layer->ln1_w, layer->ln1_b, m->eps, normed);
            linear_rows(&layer->qkv, tokens, normed, d, big, 3 * d, EPI_STORE, 0.0f);
            /* per head, so that no cache line of the keys' blocks is written by two threads */
            ClaimLoop stored = claim_loop(heads);
            for (int head; (head = claim(&stored)) >= 0;) {
                for (int t = 0; t < tokens; t++) {
                    float *q = big + (size_t)t * 3 * d + head * head_dim, *k = q + d, *v = q + 2 * d;
                    size_t base = (size_t)rows[t] * heads + head;
                    for (int i = 0; i < head_dim; i++) q[i] *= m->scaling;
                    for (int i = 0; i < head_dim; i++) {
                        store1(c->self_k[l],
                               base * head_dim * c->slots + ((size_t)(slots[t] / 16) * head_dim + i) * 16 + slots[t] % 16,
                               c->kv_format, k[i]);
                        store1(c->self_v[l], (base * c->slots + slots[t]) * head_dim + i, c->kv_format, v[i]);
                    }
                }
            }
            attention(m, c, l, 0, groups_n, groups, big, 3 * d, limits, attended, scores, score_stride);
            linear_rows(&layer->self_out, tokens, attended, d, h, d, EPI_ADD, 0.0f);
            layer_norm_rows(tokens, d, h, layer->ln2_w, layer->ln2_b, m->eps, normed);
            linear_rows(&layer->cross_q, tokens, normed, d, big, d, EPI_SCALE, m->scaling);
            attention(m, c, l, 1, cross_groups_n, cross_groups, big, d, limits, attended, scores, score_stride);
            linear_rows(&layer->cross_out, tokens, attended, d, h, d, EPI_ADD, 0.0f);
            layer_norm_rows(tokens, d, h, layer->ln3_w, layer->ln3_b, m->eps, normed);
            linear_rows(&layer->fc1, tokens, normed, d, big, m->ffn, EPI_GELU, 0.0f);
            linear_rows(&layer->fc2, tokens, big, m->ffn, h, d, EPI_ADD, 0.0f);
        }
        layer_norm_rows(tokens, d, h, m->ln_w, m->ln_b, m->eps, hidden);
        claims_leave();
    }
    claims_free(&claims);
    return 0;
}

/* linear_rows alone in a region of its own */
static void shared_linear_rows(const Linear *lin, int rows, const float *x, int ldx, float *y, int ldy, int threads) {
    Claims claims = claims_make(1);
#pragma omp parallel num_threads(threads)
    {
        claims_join(&claims);
        linear_rows(lin, rows, x, ldx, y, ldy, EPI_STORE, 0.0f);
        claims_leave();
    }
    claims_free(&claims);
}

/* y = x @ W^T (+ bias) for `rows` rows */
void linear_forward(const Linear *lin, int rows, const float *x, int ldx, float *y, int ldy, int threads) {
    shared_linear_rows(lin, rows, x, ldx, y, ldy, threads);
}

/* Columns first_tile * 64 .. (first_tile + tiles) * 64 - 1 of x @ W^T (+ bias) into y [rows][ldy], by the same
   arithmetic as linear_forward, so the same bits as those columns of its output (float formats and int8). */
void linear_tiles(const Linear *lin, int rows, const float *x, int ldx, int first_tile, int tiles, float *y, int ldy,
                  int threads) {
    Linear part = *lin;
    const int first = first_tile * TILE;
    part.packed = (const char *)lin->packed + (size_t)first_tile * lin->k * TILE * format_bytes(lin->format);
    part.n = lin->n - first < tiles * TILE ? lin->n - first : tiles * TILE;
    part.n_tiles = tiles;
    part.scale = lin->scale ? lin->scale + first : NULL;
    part.bias = lin->bias ? lin->bias + first : NULL;
    shared_linear_rows(&part, rows, x, ldx, y, ldy, threads);
}

/* For the int8 product of `row` (quantize_row: the same operations, so the same q): the ||x - x~|| of its
   quantized part plus a bound on the float rounding of the outliers' products and the final scalings, both per
   unit of ||W~_v||, rounded up. Every intermediate sum of a column is at most (||x~|| + ||outliers||) ||W~_v||
   (Cauchy-Schwarz), and each of the outliers + 4 float operations rounds it by at most 2^-24 of that. */
static float quantization_drift(const float *row, int k) {
    int8_t values[k];
    RowQuantization quantized;
    quantize_row(k, row, values, &quantized);
    double gaps = 0.0, kept = 0.0, outliers = 0.0;
    for (int i = 0; i < k; i++) {
        double part = (double)quantized.step * values[i];
        kept += part * part;
        int outlier = 0;
        for (int o = 0; o < quantized.outliers; o++) outlier |= quantized.dims[o] == i;
        if (outlier)
            outliers += (double)row[i] * row[i];
        else
            gaps += ((double)row[i] - part) * ((double)row[i] - part);
    }
    double rounding = (quantized.outliers + 4) * 0x1p-24 * (sqrt(kept) + sqrt(outliers));
    return (float)((sqrt(gaps) + rounding) * (1.0 + 1e-5)) * (1.0f + 1e-5f);
}

/* Greedy choice per row: argmax over columns of exact = x @ W^T (as linear_forward computes it), without
   computing it everywhere. approx (int8 weights W~) scores every column, and |exact_v - x.W~_v| <= error[v] *
   ||x|| for every column v. When approx is FMT_I8_VNNI it multiplies x~ (x quantized to int8) instead of x, in
   exact integer sums, so its score a_v is also off by at most drift * ||W~_v|| (approx_norms[v] >= ||W~_v||; see
   quantization_drift). Either way every column gets a bound B_v on |exact_v - a_v|; with b the
   approximate best, v can win only if a_v + B_v >= a_b - B_b, and exactly those columns are scored by `exact`.
   suppressed: [rows][n] bytes, nonzero = never chosen (or NULL). Ties go to the lowest column, as torch.argmax.
   Returns the number of exact scores taken. */
typedef struct {
    float floor;  /* no column whose bound stays below this can win */
    float reach;  /* ||x||, rounded up */
    float drift;  /* per unit of ||W~_v|| (int8 activations only) */
    int quantized;
} Screen;

static Screen screen_floor(const float *scores, int n, const float *error, const float *approx_norms, Screen screen) {
    int best = 0;
    for (int v = 1; v < n; v++)
        if (scores[v] > scores[best]) best = v;
    screen.floor = scores[best] - error[best] * screen.reach - (screen.quantized ? approx_norms[best] * screen.drift : 0.0f);
    screen.floor -= fabsf(screen.floor) * 1e-6f + 1e-30f;
    return screen;
}

/* Bit c of the result: column tile * 64 + c may win (its score plus its bound reaches the floor). */
static inline uint64_t tile_hits(const float *scores, int n, const float *error, const float *approx_norms, int tile,
                                 Screen screen) {
    uint64_t hits = 0;
    const vf limit = vf_set1(screen.floor), spread = vf_set1(screen.reach);
    const vf shift = vf_set1(screen.drift);
    for (int c = 0; c < 4; c++) {
        const int v0 = tile * TILE + c * 16, valid = n - v0;
        vf top = vf_fma(vf_load_tail(error + v0, valid), spread, vf_load_tail(scores + v0, valid));
        if (screen.quantized)
            top = vf_fma(vf_load_tail(approx_norms + v0, valid), shift, top);
        top = vf_add(top, vf_mul(vf_abs(top), vf_set1(1e-6f)));
        hits |= (uint64_t)vmask_bits(vmask_and(vmask_tail(valid), vf_ge(top, limit))) << (16 * c);
    }
    return hits;
}

#define FLAT_TILES 24 /* beyond this many tiles to rescore, screen the row again with float32 activations */

long certified_argmax(const Linear *approx, const Linear *exact, int rows, const float *x, int ldx,
                      const uint8_t *suppressed, const float *error, const float *approx_norms, float *scratch,
                      int64_t *out, int threads) {
    const int n = exact->n;
    const int stride = approx->n_tiles * TILE;
    long rescored = 0;
    Screen screens[rows];
    int flat[rows], flat_count = 0;
    Claims claims = claims_make(6);
#pragma omp parallel num_threads(threads)
    {
        claims_join(&claims);
        linear_rows(approx, rows, x, ldx, scratch, stride, EPI_STORE, 0.0f);
        ClaimLoop screened = claim_loop(rows);
        for (int r; (r = claim(&screened)) >= 0;) {
            const float *row = x + (size_t)r * ldx;
            float *scores = scratch + (size_t)r * stride;
            const uint8_t *blocked = suppressed ? suppressed + (size_t)r * n : NULL;
            double norm = 0.0;
            for (int k = 0; k < exact->k; k++) norm += (double)row[k] * row[k];
            Screen screen = {0.0f, 0.0f, 0.0f, approx->format == FMT_I8_VNNI};
            /* rounded up so that float arithmetic below never narrows the bound */
            screen.reach = (float)(sqrt(norm) * (1.0 + 1e-5)) * (1.0f + 1e-5f);
            screen.drift = screen.quantized ? quantization_drift(row, exact->k) : 0.0f;
            if (blocked)
                for (int v = 0; v < n; v++)
                    if (blocked[v]) scores[v] = -INFINITY;
            screens[r] = screen_floor(scores, n, error, approx_norms, screen);
        }
#pragma omp single
        for (int r = 0; r < rows; r++) { /* near-ties everywhere (noise, say): the looser int8 bound would rescore most */
            if (!screens[r].quantized) continue;
            int tiles = 0;
            for (int tile = 0; tile < exact->n_tiles && tiles <= FLAT_TILES; tile++)
                tiles += tile_hits(scratch + (size_t)r * stride, n, error, approx_norms, tile, screens[r]) != 0;
            if (tiles > FLAT_TILES) flat[flat_count++] = r;
        }
        if (flat_count) { /* screen those rows again with float32 activations, a block of rows per weight tile */
            float *rescreen = NULL;
#pragma omp single copyprivate(rescreen)
            rescreen = malloc((size_t)flat_count * (exact->k + stride) * sizeof(float));
            if (rescreen == NULL) {
                fputs("asr_specdec native kernels: out of memory\n", stderr);
                abort();
            }
            float *inputs = rescreen + (size_t)flat_count * stride;
            ClaimLoop copied = claim_loop(flat_count);
            for (int f; (f = claim(&copied)) >= 0;)
                memcpy(inputs + (size_t)f * exact->k, x + (size_t)flat[f] * ldx, exact->k * sizeof(float));
            ClaimLoop tiles = claim_loop(approx->n_tiles);
            for (int tile; (tile = claim(&tiles)) >= 0;)
                for (int f0 = 0; f0 < flat_count; f0 += ROW_BLOCK)
                    vnni_tile_float_rows(approx, tile, inputs + (size_t)f0 * exact->k, exact->k,
                                         rescreen + (size_t)f0 * stride, stride,
                                         flat_count - f0 < ROW_BLOCK ? flat_count - f0 : ROW_BLOCK, EPI_STORE, 0.0f);
            ClaimLoop rescreened = claim_loop(flat_count);
            for (int f; (f = claim(&rescreened)) >= 0;) {
                const int r = flat[f];
                float *scores = scratch + (size_t)r * stride;
                memcpy(scores, rescreen + (size_t)f * stride, n * sizeof(float));
                const uint8_t *blocked = suppressed ? suppressed + (size_t)r * n : NULL;
                if (blocked)
                    for (int v = 0; v < n; v++)
                        if (blocked[v]) scores[v] = -INFINITY;
                screens[r].quantized = 0;
                screens[r].drift = 0.0f;
                screens[r] = screen_floor(scores, n, error, approx_norms, screens[r]);
            }
#pragma omp single
            free(rescreen);
        }
        long rescored_here = 0;
        ClaimLoop chosen = claim_loop(rows);
        for (int r; (r = claim(&chosen)) >= 0;) {
            const float *row = x + (size_t)r * ldx;
            const float *scores = scratch + (size_t)r * stride;
            int64_t choice = 0;
            float choice_score = -INFINITY;
            int found = 0;
            for (int tile = 0; tile < exact->n_tiles; tile++) {
                uint64_t hits = tile_hits(scores, n, error, approx_norms, tile, screens[r]);
                if (!hits) continue;
                /* the tile's 64 exact scores by linear_rows' own arithmetic: cheaper than one column alone */
                float exact_scores[TILE];
                Linear one = *exact;
                one.packed = (const char *)exact->packed + (size_t)tile * exact->k * TILE * format_bytes(exact->format);
                one.n = n - tile * TILE < TILE ? n - tile * TILE : TILE;
                one.n_tiles = 1;
                one.scale = exact->scale ? exact->scale + tile * TILE : NULL; /* an int8 pack's column scales */
                one.bias = exact->bias ? exact->bias + tile * TILE : NULL;
                tile_rows(&one, 0, row, ldx, 1, exact_scores, TILE, EPI_STORE, 0.0f);
                while (hits) {
                    int lane = __builtin_ctzll(hits), v = tile * TILE + lane;
                    hits &= hits - 1;
                    if (scores[v] == -INFINITY) continue; /* suppressed */
                    rescored_here++;
                    if (!found || exact_scores[lane] > choice_score) {
                        choice = v;
                        choice_score = exact_scores[lane];
                        found = 1;
                    }
                }
            }
            out[r] = choice;
        }
#pragma omp atomic
        rescored += rescored_here;
        claims_leave();
    }
    claims_free(&claims);
    return rescored;
}

/* argmax per row of x @ W^T (+ bias) with `suppressed` [rows][n] excluded (NULL: none); ties to the lowest
   column. scratch: rows * n_tiles * 64 floats. */
void argmax_rows(const Linear *lin, int rows, const float *x, int ldx, const uint8_t *suppressed, float *scratch,
                 int64_t *out, int threads) {
    const int n = lin->n, stride = lin->n_tiles * TILE;
    Claims claims = claims_make(2);
#pragma omp parallel num_threads(threads)
    {
        claims_join(&claims);
        linear_rows(lin, rows, x, ldx, scratch, stride, EPI_STORE, 0.0f);
        ClaimLoop chosen = claim_loop(rows);
        for (int r; (r = claim(&chosen)) >= 0;) {
            const float *scores = scratch + (size_t)r * stride;
            const uint8_t *blocked = suppressed ? suppressed + (size_t)r * n : NULL;
            int best = -1;
            for (int v = 0; v < n; v++) {
                if (blocked && blocked[v]) continue;
                if (best < 0 || scores[v] > scores[best]) best = v;
            }
            out[r] = best < 0 ? 0 : best;
        }
        claims_leave();
    }
    claims_free(&claims);
}
