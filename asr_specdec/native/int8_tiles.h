/* int8 products on AMX tiles (Sapphire Rapids and later; the avx512 build with -DASR_SPECDEC_AMX, which
   native/backend.py adds where the CPU has amx_int8): the exact int32 sums vnni_sums makes, 16 rows x 16 columns x
   64 inputs per instruction instead of 16 x 4.

tdpbsud multiplies signed bytes (a row of quantized activations) by unsigned ones (the FMT_I8_VNNI pack's w + 128,
whose [k / 4][64][4] layout is already the tile's: 16 columns of 4 inputs per 64-byte row) and sums in int32, so
every sum is the integer vpdpbusd gives: the same bits as the VNNI path, whichever rows share a tile. Linux lends
the tiles' registers to a process only on request (arch_prctl), made once when the library loads; where the kernel
refuses, the VNNI path runs. Each thread loads the tile configuration at the start of a product (PyTorch's oneDNN
may have loaded its own on the same OpenMP threads) and releases the tiles at its end. */
#ifndef ASR_SPECDEC_INT8_TILES_H
#define ASR_SPECDEC_INT8_TILES_H

#include "kernels.h"

#define TILE_ROWS 16   /* rows of activations per tile */
#define TILE_BLOCK 32  /* rows per tile_sums call: two tiles of activations */
#define TILE_PANEL 64  /* rows quantized and multiplied together on tiles: two tile_sums calls */
#define TILE_INPUTS 64 /* inputs per tile row (bytes) */

#ifdef ASR_SPECDEC_AMX
#include <sys/syscall.h>
#include <unistd.h>

#define ARCH_REQ_XCOMP_PERM 0x1023
#define XFEATURE_XTILEDATA 18

static int tiles_permitted;

__attribute__((constructor)) static void request_tiles(void) {
    tiles_permitted = syscall(SYS_arch_prctl, ARCH_REQ_XCOMP_PERM, XFEATURE_XTILEDATA) == 0;
}

typedef struct {
    uint8_t palette, start_row, reserved[14];
    uint16_t bytes_per_row[16];
    uint8_t rows[16];
} TileConfig;

/* Whether a product over k inputs runs on tiles here (k a whole number of tile rows). */
static inline int tiles_for(int k) { return tiles_permitted && k % TILE_INPUTS == 0; }

/* Tiles 0-3: the sums of 2 x 2 blocks of 16 rows x 16 columns; 4 and 5: 16 rows of activations each; 6 and 7: 16
   columns of weights each (each tile load serves two products). */
static inline void tiles_begin(void) {
    TileConfig config;
    memset(&config, 0, sizeof config);
    config.palette = 1;
    for (int t = 0; t < 8; t++) {
        config.bytes_per_row[t] = 64;
        config.rows[t] = 16;
    }
    _tile_loadconfig(&config);
}

static inline void tiles_end(void) { _tile_release(); }

/* sums[32][64] (row stride 64) = the exact int32 sums of 32 rows of int8 values ([32][k], row stride k) with the
   64 columns of `tile` of an FMT_I8_VNNI pack: sum(q * (w + 128)) per column, as vnni_sums. */
static inline void tile_sums(const Linear *lin, int tile, const int8_t *values, int32_t *sums) {
    const int k = lin->k;
    const uint8_t *w = (const uint8_t *)lin->packed + (size_t)tile * k * TILE;
    for (int half = 0; half < 2; half++) { /* columns 0-31, then 32-63 */
        _tile_zero(0);
        _tile_zero(1);
        _tile_zero(2);
        _tile_zero(3);
        for (int i = 0; i < k; i += TILE_INPUTS) {
            const uint8_t *groups = w + (size_t)(i / 4) * TILE * 4 + 128 * half; /* 16 groups of 4, 256 bytes apart */
            _tile_loadd(4, values + i, k);
            _tile_loadd(5, values + (size_t)TILE_ROWS * k + i, k);
            _tile_loadd(6, groups, TILE * 4);
            _tile_loadd(7, groups + 64, TILE * 4);
            _tile_dpbsud(0, 4, 6);
            _tile_dpbsud(1, 4, 7);
            _tile_dpbsud(2, 5, 6);
            _tile_dpbsud(3, 5, 7);
        }
        int32_t *top = sums + 32 * half, *bottom = top + (size_t)TILE_ROWS * TILE;
        _tile_stored(0, top, TILE * 4);
        _tile_stored(1, top + 16, TILE * 4);
        _tile_stored(2, bottom, TILE * 4);
        _tile_stored(3, bottom + 16, TILE * 4);
    }
}

#else
static const int tiles_permitted = 0;
static inline int tiles_for(int k) { (void)k; return 0; }
static inline void tiles_begin(void) {}
static inline void tiles_end(void) {}
static inline void tile_sums(const Linear *lin, int tile, const int8_t *values, int32_t *sums) {
    (void)lin, (void)tile, (void)values, (void)sums;
}
#endif

/* The exact int32 sums of the pass's columns (from c0) of tile `tile` with R quantized rows: loaded from `sums`
   ([R][64], row stride 64), made on tiles by tile_sums, or made here by VNNI where `sums` is NULL. The same
   integers either way. */
static inline __attribute__((always_inline)) void exact_sums(const Linear *lin, int tile, int c0, QuantizedRows x,
                                                             const int32_t *sums, vi out[][TILE_PASS], int R) {
    if (sums)
        for (int r = 0; r < R; r++)
            for (int c = 0; c < TILE_PASS; c++) out[r][c] = vi_load(sums + (size_t)r * TILE + (c0 + c) * 16);
    else
        vnni_sums(lin, tile, c0, x, out, R);
}

#endif
