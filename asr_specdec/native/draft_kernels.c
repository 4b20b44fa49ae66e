/* The drafter's cheaper products. A draft needs no exactness, only agreement with the main model most of the
time, so what a draft step reads can shrink: int4 weights with a scale per group of inputs, and a vocabulary
choice that screens every token with int4 rows and settles the best few with int8 ones.

int4 layout: [ceil(n / 64)][k / 8][64][4] bytes; the 4 bytes of a column hold 8 inputs, byte b holding input
8e + b in its low nibble and input 8e + 4 + b in its high one, each as q + 8 (q in -7..7), so that vpdpbusd
multiplies the unsigned nibbles by int8 activations: sum(q * x) = sum((q + 8) * x) - 8 * sum(x). Scales are
[k / group][n]: one per output column and group of `group` inputs. */
#include "kernels.h"

#define MAX_CANDIDATES 64

static inline __attribute__((always_inline)) void tile_block_int4(const Linear *lin, int tile, int c0,
                                                                  QuantizedRows x, const int32_t *group_sums, float *y,
                                                                  int ldy, int epilogue, float factor, int R) {
    const int k = lin->k, group = lin->group, groups = k / group;
    const uint8_t *w = (const uint8_t *)lin->packed + (size_t)tile * (k / 8) * TILE * 4;
    vf acc[ROW_BLOCK][TILE_PASS];
    int valid[TILE_PASS];
    for (int c = 0; c < TILE_PASS; c++) valid[c] = lin->n - tile * TILE - (c0 + c) * 16;
    for (int r = 0; r < R; r++)
        for (int c = 0; c < TILE_PASS; c++) acc[r][c] = vf_zero();
    for (int g = 0; g < groups; g++) {
        vi sums[ROW_BLOCK][TILE_PASS];
        for (int r = 0; r < R; r++)
            for (int c = 0; c < TILE_PASS; c++) sums[r][c] = vi_zero();
        for (int e = g * group / 8; e < (g + 1) * group / 8; e++) {
            const uint8_t *block = w + (size_t)e * TILE * 4 + 64 * c0;
            prefetch_ahead(block, 64 * TILE_PASS);
            vb low[TILE_PASS], high[TILE_PASS];
            for (int c = 0; c < TILE_PASS; c++) {
                vb bytes = vb_load(block + 64 * c);
                low[c] = vb_low_nibbles(bytes);
                high[c] = vb_high_nibbles(bytes);
            }
            for (int r = 0; r < R; r++) {
                int32_t first, second;
                memcpy(&first, x.values + (size_t)r * k + 8 * e, 4);
                memcpy(&second, x.values + (size_t)r * k + 8 * e + 4, 4);
                vb xa = vb_set1_i32(first), xb = vb_set1_i32(second);
                for (int c = 0; c < TILE_PASS; c++) {
                    sums[r][c] = vi_dot_nibbles(sums[r][c], low[c], xa);
                    sums[r][c] = vi_dot_nibbles(sums[r][c], high[c], xb);
                }
            }
        }
        for (int c = 0; c < TILE_PASS; c++) {
            vf scale = vf_load_tail(lin->scale + (size_t)g * lin->n + tile * TILE + (c0 + c) * 16, valid[c]);
            for (int r = 0; r < R; r++) {
                vi offset = vi_set1(8 * group_sums[r * groups + g]);
                acc[r][c] = vf_fma(vf_from_vi(vi_sub(sums[r][c], offset)), scale, acc[r][c]);
            }
        }
    }
    for (int r = 0; r < R; r++) {
        const RowQuantization *row = x.rows + r;
        vf step = vf_set1(row->step);
        for (int c = 0; c < TILE_PASS; c++) acc[r][c] = vf_mul(acc[r][c], step);
        for (int o = 0; o < row->outliers; o++) {
            const int dim = row->dims[o], e = dim / 8, b = dim % 8;
            const int shift = 8 * (b % 4) + 4 * (b / 4);
            vf value = vf_set1(row->values[o]);
            for (int c = 0; c < TILE_PASS; c++) {
                vi bits = vi_srl(vi_load(w + (size_t)e * TILE * 4 + 64 * (c0 + c)), shift);
                vi q = vi_sub(vi_and(bits, vi_set1(0x0f)), vi_set1(8));
                vf scale = vf_load_tail(lin->scale + (size_t)(dim / group) * lin->n + tile * TILE + (c0 + c) * 16,
                                        valid[c]);
                acc[r][c] = vf_fma(value, vf_mul(vf_from_vi(q), scale), acc[r][c]);
            }
        }
    }
    Linear scaled = *lin; /* the group scales are applied: finish_tile adds the bias and the epilogue only */
    scaled.scale = NULL;
    finish_tile(&scaled, tile, c0, acc, R, y, ldy, epilogue, factor);
}

static void tile_rows_int4(const Linear *lin, int tile, QuantizedRows x, const int32_t *group_sums, int rows,
                                float *y, int ldy, int epilogue, float factor) {
#define BLOCK(R)                                                                                                 \
    for (int c0 = 0; c0 < 4 && tile * TILE + c0 * 16 < lin->n; c0 += TILE_PASS)                                  \
        tile_block_int4(lin, tile, c0, x, group_sums, y, ldy, epilogue, factor, R)
    WITH_CONSTANT_ROWS(rows, BLOCK)
#undef BLOCK
}

/* linear_rows for FMT_I4_VNNI: every thread quantizes the rows and sums each group of their int8 values, then the
   tiles are shared out. */
void linear_rows_int4(const Linear *lin, int rows, const float *x, int ldx, float *y, int ldy, int epilogue,
                      float factor) {
    const int k = lin->k, groups = k / lin->group;
    RowQuantization *quantized = malloc((size_t)rows * (sizeof(RowQuantization) + k + groups * sizeof(int32_t)));
    if (quantized == NULL) {
        fputs("asr_specdec native kernels: out of memory\n", stderr);
        abort();
    }
    int32_t *group_sums = (int32_t *)(quantized + rows);
    int8_t *values = (int8_t *)(group_sums + (size_t)rows * groups);
    for (int r = 0; r < rows; r++) {
        int8_t *row = values + (size_t)r * k;
        quantize_row(k, x + (size_t)r * ldx, row, quantized + r);
        for (int g = 0; g < groups; g++) {
            int32_t total = 0;
            for (int i = g * lin->group; i < (g + 1) * lin->group; i++) total += row[i];
            group_sums[r * groups + g] = total;
        }
    }
    ClaimLoop tiles = claim_loop(lin->n_tiles);
    for (int tile; (tile = claim(&tiles)) >= 0;) {
        for (int r0 = 0; r0 < rows; r0 += ROW_BLOCK) {
            int block = rows - r0 < ROW_BLOCK ? rows - r0 : ROW_BLOCK;
            QuantizedRows part = {values + (size_t)r0 * k, quantized + r0};
            tile_rows_int4(lin, tile, part, group_sums + (size_t)r0 * groups, block, y + (size_t)r0 * ldy, ldy,
                           epilogue, factor);
        }
    }
    free(quantized);
}

/* ---------------------------------------------------------------- the drafter's vocabulary choice */

static inline float dot_int8(const float *x, const int8_t *row, int k) {
    vf acc = vf_zero();
    for (int i = 0; i < k; i += 16) acc = vf_fma(vf_load(x + i), vf_load_i8(row + i), acc);
    return vf_reduce_add(acc);
}

/* The `count` best-screened allowed columns below `end` (count <= MAX_CANDIDATES); returns how many there are. */
static int best_screened(const float *scores, int end, const uint8_t *blocked, int count, int *found) {
    float kept[MAX_CANDIDATES];
    int size = 0, weakest = 0;
    float floor = -INFINITY;
    for (int v0 = 0; v0 < end; v0 += 16) {
        uint32_t hits = vmask_bits(vmask_and(vmask_tail(end - v0), vf_gt(vf_load_tail(scores + v0, end - v0), vf_set1(floor))));
        while (hits) {
            const int v = v0 + __builtin_ctz(hits);
            hits &= hits - 1;
            if (blocked && blocked[v]) continue;
            if (scores[v] <= floor) continue; /* the floor rose since this block was compared */
            if (size < count) {
                found[size] = v;
                kept[size++] = scores[v];
            } else {
                found[weakest] = v;
                kept[weakest] = scores[v];
            }
            if (size == count) {
                weakest = 0;
                for (int i = 1; i < count; i++)
                    if (kept[i] < kept[weakest]) weakest = i;
                floor = kept[weakest];
            }
        }
    }
    return size;
}

/* Greedy draft token per row: the best of the `candidates` columns that the int4 screen (rows centred on their
   mean, which shifts every score alike) scores highest, by their int8 rows (rows8 [n][k], scale8 [n]). With
   Whisper's timestamp rule (group_begins[r] < n): the best text token (ids below it) against every timestamp
   scored by its int8 row; when the timestamps together outweigh the best text token, the best timestamp (as the
   main model's rule, on these approximate scores). suppressed: [rows][n] bytes or NULL; group_begins: [rows] or
   NULL (no rule). scratch: rows * screen->n_tiles * 64 floats. */
void draft_choice(const Linear *screen, const int8_t *rows8, const float *scale8, int rows, const float *x, int ldx,
                  const uint8_t *suppressed, const int32_t *group_begins, int candidates, float *scratch,
                  int64_t *out, int threads) {
    const int n = screen->n, k = screen->k, stride = screen->n_tiles * TILE;
    if (candidates > MAX_CANDIDATES) candidates = MAX_CANDIDATES;
    if (candidates < 1) candidates = 1;
    Claims claims = claims_make(2);
#pragma omp parallel num_threads(threads)
    {
        claims_join(&claims);
        linear_rows(screen, rows, x, ldx, scratch, stride, EPI_STORE, 0.0f);
        ClaimLoop chosen = claim_loop(rows);
        for (int r; (r = claim(&chosen)) >= 0;) {
            const float *row = x + (size_t)r * ldx;
            const uint8_t *blocked = suppressed ? suppressed + (size_t)r * n : NULL;
            const int text_end = group_begins && group_begins[r] < n ? group_begins[r] : n;
            int found[MAX_CANDIDATES];
            const int size = best_screened(scratch + (size_t)r * stride, text_end, blocked, candidates, found);
            int text = -1;
            float text_score = -INFINITY;
            for (int i = 0; i < size; i++) {
                const float score = dot_int8(row, rows8 + (size_t)found[i] * k, k) * scale8[found[i]];
                if (text < 0 || score > text_score || (score == text_score && found[i] < text)) {
                    text = found[i];
                    text_score = score;
                }
            }
            int stamp = -1;
            float stamp_score = -INFINITY, stamp_total = 0.0f;
            if (text_end < n) {
                float stamp_scores[n - text_end];
                for (int v = text_end; v < n; v++) {
                    stamp_scores[v - text_end] = blocked && blocked[v] ? -INFINITY
                                                                       : dot_int8(row, rows8 + (size_t)v * k, k) * scale8[v];
                    if (stamp_scores[v - text_end] > stamp_score) {
                        stamp = v;
                        stamp_score = stamp_scores[v - text_end];
                    }
                }
                if (stamp >= 0)
                    for (int v = text_end; v < n; v++) stamp_total += expf(stamp_scores[v - text_end] - stamp_score);
            }
            int choice = text;
            if (stamp >= 0) {
                const int forced = text < 0 || stamp_score + logf(stamp_total) > text_score;
                if (forced || stamp_score > text_score) choice = stamp;
            }
            out[r] = choice < 0 ? 0 : choice;
        }
        claims_leave();
    }
    claims_free(&claims);
}

/* ---------------------------------------------------------------- int8 cross-attention states */

/* src [blocks][dim][lanes] (float32 or bfloat16) to int8 dst and float32 scales [blocks][lanes]: each vector of
   `dim` values (one lane of one block) scaled by its max |value| / 127. lanes 1 (values, one vector per block): dst
   in src's layout. lanes 16 (keys, 16 transposed per block; dim a multiple of 4): dst as [blocks][dim / 4][16][4]
   bytes of q + 128, the four dims of a key together as the int8 products read them (score_chunks_int8). */
void quantize_int8_vectors(const void *src, int format, long blocks, int dim, int lanes, int8_t *dst, float *scales,
                           int threads) {
#pragma omp parallel for num_threads(threads) schedule(static)
    for (long block = 0; block < blocks; block++) {
        const size_t base = (size_t)block * dim * lanes;
        if (lanes == 16) {
            vf largest = vf_zero();
            for (int i = 0; i < dim; i++) largest = vf_max(largest, vf_abs(load16(src, base + (size_t)i * 16, format)));
            vf scale = vf_div(largest, vf_set1(127.0f));
            scale = vf_blend(vf_gt(scale, vf_zero()), vf_set1(1.0f), scale);
            vf_store(scales + (size_t)block * 16, scale);
            vf inverse = vf_div(vf_set1(1.0f), scale);
            for (int g = 0; g < dim / 4; g++) { /* 4 dims of the 16 keys: 16 lanes of 4 bytes q + 128, dim order */
                vi four = vi_zero();
                for (int r = 0; r < 4; r++) {
                    vi q = vi_round(vf_mul(load16(src, base + (size_t)(4 * g + r) * 16, format), inverse));
                    q = vi_max(vi_min(q, vi_set1(127)), vi_set1(-127));
                    four = vi_or(four, vi_sll(vi_add(q, vi_set1(128)), 8 * r));
                }
                vi_store(dst + base + (size_t)g * 64, four);
            }
        } else { /* dim a multiple of 16 */
            scales[block] = quantize_vector((const char *)src + base * format_bytes(format), format, dim, dst + base);
        }
    }
}
