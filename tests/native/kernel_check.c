/* A C driver for the kernels, built for any target with the kernel sources (tests/native/test_neon.py runs it under
   qemu-aarch64 for the NEON build, and natively): a decoder pass over 9 tokens equals 9 one-token passes bit for bit
   at every weight format, products agree with a float64 reference within their bounds, the certified argmax equals
   the full argmax (near-ties included). Prints "ok <digest of every output's bits>" and exits 0, or names the check
   that failed and exits 1. */
#include "../../asr_specdec/native/kernels.h"

static uint64_t seed = 88172645463325252ull;
static int failures = 0;
static uint64_t digest = 1469598103934665603ull;

static float uniform(void) { /* xorshift64, in [-1, 1) */
    seed ^= seed << 13;
    seed ^= seed >> 7;
    seed ^= seed << 17;
    return (float)((seed >> 40) * (1.0 / (1ull << 23)) - 1.0);
}

static float *randoms(size_t count, float size) {
    float *values = malloc(count * sizeof(float));
    for (size_t i = 0; i < count; i++) values[i] = size * (uniform() + uniform() + uniform());
    return values;
}

static void check(int ok, const char *what) {
    if (!ok) {
        printf("FAILED: %s\n", what);
        failures++;
    }
}

static void absorb(const void *data, size_t bytes) { /* FNV-1a over the bits of every output */
    for (size_t i = 0; i < bytes; i++) digest = (digest ^ ((const uint8_t *)data)[i]) * 1099511628211ull;
}

/* w [n][k] (row v = output column v) packed as the kernels read it (native/packing.py's layouts) */
static Linear pack(int n, int k, const float *w, const float *bias, int format) {
    Linear lin = {format, n, k, (n + TILE - 1) / TILE, 0, NULL, NULL, bias};
    const size_t cells = (size_t)lin.n_tiles * TILE * k;
    float *scale = NULL;
    if (format == FMT_I8 || format == FMT_I8_VNNI) {
        scale = malloc(n * sizeof(float));
        for (int v = 0; v < n; v++) {
            float top = 0.0f;
            for (int i = 0; i < k; i++) top = fmaxf(top, fabsf(w[(size_t)v * k + i]));
            scale[v] = top > 0.0f ? top / 127.0f : 1.0f;
        }
    }
    void *packed = calloc(cells, format_bytes(format));
    for (int v = 0; v < n; v++)
        for (int i = 0; i < k; i++) {
            const float value = w[(size_t)v * k + i];
            const size_t cell = ((size_t)(v / TILE) * k + i) * TILE + v % TILE;
            const int q = scale ? (int)fmaxf(-127.0f, fminf(127.0f, nearbyintf(value / scale[v]))) : 0;
            if (format == FMT_F32) ((float *)packed)[cell] = value;
            if (format == FMT_BF16) ((uint16_t *)packed)[cell] = to_bf16(value);
            if (format == FMT_I8) ((int8_t *)packed)[cell] = (int8_t)q;
            if (format == FMT_I8_VNNI)
                ((uint8_t *)packed)[(((size_t)(v / TILE) * (k / 4) + i / 4) * TILE + v % TILE) * 4 + i % 4] = (uint8_t)(q + 128);
        }
    lin.packed = packed;
    lin.scale = scale;
    return lin;
}

static double weight(const Linear *lin, int v, int i) { /* what the kernels multiply by */
    if (lin->format == FMT_F32) return ((const float *)lin->packed)[((size_t)(v / TILE) * lin->k + i) * TILE + v % TILE];
    if (lin->format == FMT_BF16) return load1(lin->packed, ((size_t)(v / TILE) * lin->k + i) * TILE + v % TILE, FMT_BF16);
    if (lin->format == FMT_I8) return lin->scale[v] * ((const int8_t *)lin->packed)[((size_t)(v / TILE) * lin->k + i) * TILE + v % TILE];
    const uint8_t *cell = (const uint8_t *)lin->packed + (((size_t)(v / TILE) * (lin->k / 4) + i / 4) * TILE + v % TILE) * 4;
    return lin->scale[v] * ((int)cell[i % 4] - 128);
}

/* each output of one row within float32's (k + 4) 2^-24 sum |w x| of float64, plus, for int8 activations (`largest`,
   the row's largest non-outlier |x|, >= 0), the quantization's ||x - x~|| ||W~_v|| */
static void check_bound(const Linear *lin, const float *bias, const float *x, const float *y, double largest,
                        const char *what) {
    for (int v = 0; v < lin->n; v++) {
        double exact = bias[v], magnitude = fabs(bias[v]), norm = 0.0;
        for (int i = 0; i < lin->k; i++) {
            exact += weight(lin, v, i) * x[i];
            magnitude += fabs(weight(lin, v, i) * x[i]);
            norm += weight(lin, v, i) * weight(lin, v, i);
        }
        double bound = (lin->k + 4) * 0x1p-24 * magnitude * 1.01;
        if (largest >= 0.0) bound += sqrt((double)lin->k) * largest / 254.0 * sqrt(norm) * 1.01;
        check(fabs(y[v] - exact) <= bound, what);
    }
}

/* linear_forward: rows together give each row's bits alone; float32 sums within (k + 2) 2^-24 sum |w x| of float64,
   int8 activations within the quantization's ||x - x~|| ||W~_v|| */
static void check_linear(int format) {
    const int n = 150, k = 96, rows = 9;
    float *w = randoms((size_t)n * k, 0.3f);
    float *bias = randoms(n, 1.0f);
    float *x = randoms((size_t)rows * k, 1.0f);
    x[2 * k + 5] = 40.0f; /* an outlier */
    Linear lin = pack(n, k, w, bias, format);
    float *together = malloc((size_t)rows * n * sizeof(float)), *alone = malloc(n * sizeof(float));
    linear_forward(&lin, rows, x, k, together, n, 2);
    absorb(together, (size_t)rows * n * sizeof(float));
    for (int r = 0; r < rows; r++) {
        linear_forward(&lin, 1, x + (size_t)r * k, k, alone, n, 1);
        check(memcmp(alone, together + (size_t)r * n, n * sizeof(float)) == 0, "linear_forward: a row alone = among 9");
        double largest = 0.0;
        for (int i = 0; i < k; i++) largest = fmax(largest, i == 5 && r == 2 ? 0.0 : fabs(x[(size_t)r * k + i]));
        check_bound(&lin, bias, x + (size_t)r * k, together + (size_t)r * n, format == FMT_I8_VNNI ? largest : -1.0,
                    "linear_forward: within the float64 bound");
    }
}

/* an FMT_I8_VNNI pack read as FMT_I8_VNNI_FLOAT: an FMT_I8 pack's bits (rows alone and together, a short last
   tile, a bias), and as the exact side of certified_argmax the full argmax over the FMT_I8 pack */
static void check_vnni_float(void) {
    const int n = 150, k = 96, rows = 9;
    float *w = randoms((size_t)n * k, 0.3f);
    float *bias = randoms(n, 1.0f);
    float *x = randoms((size_t)rows * k, 1.0f);
    Linear int8 = pack(n, k, w, bias, FMT_I8), read = pack(n, k, w, bias, FMT_I8_VNNI);
    read.format = FMT_I8_VNNI_FLOAT;
    float *expected = malloc((size_t)rows * n * sizeof(float)), *got = malloc((size_t)rows * n * sizeof(float));
    for (int count = 1; count <= rows; count++) {
        linear_forward(&int8, count, x, k, expected, n, 2);
        linear_forward(&read, count, x, k, got, n, count % 2 + 1);
        check(memcmp(expected, got, (size_t)count * n * sizeof(float)) == 0, "int8-vnni read as float = int8");
    }
    absorb(got, (size_t)rows * n * sizeof(float));
    Linear screen = pack(n, k, w, NULL, FMT_I8_VNNI), exact = screen, whole = pack(n, k, w, NULL, FMT_I8);
    exact.format = FMT_I8_VNNI_FLOAT;
    float *error = malloc(n * sizeof(float)), *norms = malloc(n * sizeof(float));
    for (int v = 0; v < n; v++) {
        double norm = 0.0;
        for (int i = 0; i < k; i++) norm += weight(&screen, v, i) * weight(&screen, v, i);
        error[v] = (float)(2 * (k + 2) * 0x1p-24 * sqrt(norm) * 1.001);
        norms[v] = (float)(sqrt(norm) * 1.001);
    }
    float *scratch = malloc((size_t)rows * screen.n_tiles * TILE * sizeof(float));
    int64_t certified[9], full[9];
    certified_argmax(&screen, &exact, rows, x, k, NULL, error, norms, scratch, certified, 2);
    argmax_rows(&whole, rows, x, k, NULL, scratch, full, 2);
    for (int r = 0; r < rows; r++) check(certified[r] == full[r], "certified argmax, int8-vnni read as float = int8's");
    free(scratch), free(error), free(norms), free(expected), free(got);
}

static Linear random_linear(int n, int k, int format) { /* one statement per draw: C leaves argument order open */
    float *w = randoms((size_t)n * k, 0.2f);
    float *bias = randoms(n, 0.1f);
    return pack(n, k, w, bias, format);
}

static const float *norm_weights(int d, float size) {
    return randoms(d, size);
}

/* decoder_pass over 9 tokens of one row = 9 one-token passes, bit for bit; cross_format FMT_I8: the cross-attention
   states quantized as the runner quantizes them (quantize_int8_vectors), an odd number of them */
static void check_decoder(int format, int kv_format, int cross_format) {
    const int d = 64, heads = 2, head_dim = 32, ffn = 128, layers = 2, vocab = 100, slots = 16, enc_len = 21,
              enc_pad = 32, tokens = 9;
    Layer layer_structs[2];
    for (int l = 0; l < layers; l++) {
        Layer *layer = &layer_structs[l];
        layer->ln1_w = norm_weights(d, 1.0f);
        layer->ln1_b = norm_weights(d, 0.1f);
        layer->ln2_w = norm_weights(d, 1.0f);
        layer->ln2_b = norm_weights(d, 0.1f);
        layer->ln3_w = norm_weights(d, 1.0f);
        layer->ln3_b = norm_weights(d, 0.1f);
        layer->qkv = random_linear(3 * d, d, format);
        layer->self_out = random_linear(d, d, format);
        layer->cross_q = random_linear(d, d, format);
        layer->cross_out = random_linear(d, d, format);
        layer->fc1 = random_linear(ffn, d, format);
        layer->fc2 = random_linear(d, ffn, format);
    }
    Model model = {d, heads, head_dim, ffn, layers, 1.0f / sqrtf((float)head_dim), 1e-5f, NULL, NULL, NULL, NULL,
                   layer_structs};
    model.embed = randoms((size_t)vocab * d, 1.0f);
    model.positions = randoms((size_t)32 * d, 0.5f);
    model.ln_w = norm_weights(d, 1.0f);
    model.ln_b = norm_weights(d, 0.1f);
    void *self_k[2], *self_v[2], *cross_k[2], *cross_v[2];
    const float *key_scales[2], *value_scales[2];
    const size_t kv = format_bytes(kv_format), self_cells = (size_t)heads * slots * head_dim;
    for (int l = 0; l < layers; l++) {
        float *keys = randoms((size_t)heads * enc_pad * head_dim, 1.0f);
        for (int h = 0; h < heads; h++) /* zero past the encoder length */
            for (size_t cell = 0; cell < (size_t)enc_pad * head_dim; cell++)
                if ((int)((cell / (16 * head_dim)) * 16 + cell % 16) >= enc_len) keys[h * (size_t)enc_pad * head_dim + cell] = 0.0f;
        cross_k[l] = keys;
        cross_v[l] = randoms((size_t)heads * enc_len * head_dim, 1.0f);
        if (cross_format == FMT_I8) {
            int8_t *k8 = malloc((size_t)heads * enc_pad * head_dim), *v8 = malloc((size_t)heads * enc_len * head_dim);
            float *ks = malloc((size_t)heads * enc_pad * sizeof(float)), *vs = malloc((size_t)heads * enc_len * sizeof(float));
            quantize_int8_vectors(cross_k[l], FMT_F32, (long)heads * enc_pad / 16, head_dim, 16, k8, ks, 1);
            quantize_int8_vectors(cross_v[l], FMT_F32, (long)heads * enc_len, head_dim, 1, v8, vs, 1);
            cross_k[l] = k8, cross_v[l] = v8, key_scales[l] = ks, value_scales[l] = vs;
        }
        self_k[l] = calloc(self_cells, kv);
        self_v[l] = calloc(self_cells, kv);
    }
    Cache cache = {kv_format, cross_format, slots, enc_len, enc_pad, self_k, self_v, cross_k, cross_v,
                   cross_format == FMT_I8 ? key_scales : NULL, cross_format == FMT_I8 ? value_scales : NULL, NULL};
    int32_t ids[9] = {5, 17, 99, 3, 42, 42, 8, 0, 61}, rows[9] = {0}, positions[9], limits[9];
    for (int t = 0; t < tokens; t++) positions[t] = limits[t] = t;
    float *scratch = malloc(scratch_floats(&model, &cache, tokens, 2) * sizeof(float));
    float *together = malloc((size_t)tokens * d * sizeof(float)), *alone = malloc((size_t)d * sizeof(float));
    check(decoder_pass(&model, &cache, tokens, ids, rows, positions, positions, limits, together, scratch, 2) == 0,
          "decoder_pass runs");
    absorb(together, (size_t)tokens * d * sizeof(float));
    for (int l = 0; l < layers; l++) memset(self_k[l], 0, self_cells * kv), memset(self_v[l], 0, self_cells * kv);
    for (int t = 0; t < tokens; t++) {
        decoder_pass(&model, &cache, 1, ids + t, rows, positions + t, positions + t, limits + t, alone, scratch, 1);
        check(memcmp(alone, together + (size_t)t * d, d * sizeof(float)) == 0, "decoder_pass: a token alone = among 9");
    }
}

/* the int8 encoder's products (linear_int8_f32, linear_int8_bf16): within the float64 bound of linear_forward's
   int8 activations, the bfloat16 form the float32 form's bits rounded to bfloat16 (the same integers), a row's bits
   the same alone as among 50 */
static void check_encoder_int8(int gelu) {
    const int n = 150, k = 128, rows = 50;
    float *w = randoms((size_t)n * k, 0.3f);
    float *bias = randoms(n, 1.0f);
    float *x = randoms((size_t)rows * k, 1.0f);
    x[7 * k + 3] = 80.0f; /* an outlier */
    uint16_t *x16 = malloc((size_t)rows * k * 2), *y16 = malloc((size_t)rows * n * 2);
    for (size_t i = 0; i < (size_t)rows * k; i++) x[i] = load1(&(uint16_t){x16[i] = to_bf16(x[i])}, 0, FMT_BF16);
    Linear lin = pack(n, k, w, bias, FMT_I8_VNNI);
    float *y = malloc((size_t)rows * n * sizeof(float)), *alone = malloc(n * sizeof(float));
    check(linear_int8_f32(&lin, rows, x, k, y, n, gelu, 2) == 0, "linear_int8_f32 runs");
    check(linear_int8_bf16(&lin, rows, x16, k, y16, n, gelu, 2) == 0, "linear_int8_bf16 runs");
    absorb(y, (size_t)rows * n * sizeof(float));
    int same = 1;
    for (size_t i = 0; i < (size_t)rows * n; i++) same &= to_bf16(y[i]) == y16[i];
    check(same, "linear_int8_bf16 = linear_int8_f32 rounded to bfloat16");
    for (int r = 0; r < rows; r++) {
        linear_int8_f32(&lin, 1, x + (size_t)r * k, k, alone, n, gelu, 1);
        check(memcmp(alone, y + (size_t)r * n, n * sizeof(float)) == 0, "linear_int8_f32: a row alone = among 50");
        double largest = 0.0;
        for (int i = 0; i < k; i++) largest = fmax(largest, i == 3 && r == 7 ? 0.0 : fabs(x[(size_t)r * k + i]));
        if (!gelu)
            check_bound(&lin, bias, x + (size_t)r * k, y + (size_t)r * n, largest, "linear_int8_f32: within the float64 bound");
    }
}

/* certified_argmax (an int8 screen, float32 exact scores) = the argmax of the full product, near-ties included */
static void check_certified_argmax(int screen_format) {
    const int n = 300, k = 64, rows = 6;
    float *w = randoms((size_t)n * k, 0.1f);
    float *x = randoms((size_t)rows * k, 1.0f);
    for (int i = 0; i < k; i++) { /* columns 3 and 7 lead row 0's scores and differ by about 1e-4 */
        w[3 * k + i] = x[i] * 0.05f;
        w[7 * k + i] = w[3 * k + i] + (i == 0 ? copysignf(1e-4f, x[0]) : 0.0f);
    }
    Linear exact = pack(n, k, w, NULL, FMT_F32), approx = pack(n, k, w, NULL, screen_format);
    float *error = malloc(n * sizeof(float)), *norms = malloc(n * sizeof(float));
    for (int v = 0; v < n; v++) { /* packing.argmax_error's bound, in float64 */
        double difference = 0.0, exact_norm = 0.0, approx_norm = 0.0;
        for (int i = 0; i < k; i++) {
            difference += (weight(&exact, v, i) - weight(&approx, v, i)) * (weight(&exact, v, i) - weight(&approx, v, i));
            exact_norm += weight(&exact, v, i) * weight(&exact, v, i);
            approx_norm += weight(&approx, v, i) * weight(&approx, v, i);
        }
        const double rounding = (k + 2) * 0x1p-24;
        error[v] = (float)((sqrt(difference) + rounding * (sqrt(exact_norm) + sqrt(approx_norm))) * 1.001);
        norms[v] = (float)(sqrt(approx_norm) * 1.001);
    }
    float *scratch = malloc((size_t)rows * exact.n_tiles * TILE * sizeof(float));
    int64_t certified[6], full[6];
    certified_argmax(&approx, &exact, rows, x, k, NULL, error, norms, scratch, certified, 2);
    argmax_rows(&exact, rows, x, k, NULL, scratch, full, 2);
    absorb(certified, sizeof(certified));
    for (int r = 0; r < rows; r++) check(certified[r] == full[r], "certified_argmax = the full argmax");
    check(full[0] == 7, "the near-tie is settled exactly");
}

/* the largest difference of `out` [length][width] from float64 attention over qkv [length][3 * width], the scaled
   queries rounded to bfloat16 first where `bf16_queries` (as the bfloat16 kernel rounds them) */
static double attention_error(const float *qkv, const float *out, int length, int heads, int head_dim, float scaling,
                              int bf16_queries) {
    const int width = heads * head_dim;
    double worst = 0.0;
    for (int h = 0; h < heads; h++)
        for (int q = 0; q < length; q++) {
            double scores[64], top = -INFINITY, total = 0.0;
            for (int j = 0; j < length; j++) {
                scores[j] = 0.0;
                for (int i = 0; i < head_dim; i++) {
                    const float query = qkv[(size_t)q * 3 * width + h * head_dim + i] * scaling;
                    scores[j] += (double)(bf16_queries ? load1(&(uint16_t){to_bf16(query)}, 0, FMT_BF16) : query)
                                 * qkv[(size_t)j * 3 * width + width + h * head_dim + i];
                }
                top = fmax(top, scores[j]);
            }
            for (int j = 0; j < length; j++) total += scores[j] = exp(scores[j] - top);
            for (int i = 0; i < head_dim; i++) {
                double value = 0.0;
                for (int j = 0; j < length; j++) value += scores[j] / total * qkv[(size_t)j * 3 * width + 2 * width + h * head_dim + i];
                worst = fmax(worst, fabs(value - out[(size_t)q * width + h * head_dim + i]));
            }
        }
    return worst;
}

/* encoder_attention_bf16 within 0.06 of float64 attention over the same bfloat16 inputs (as test_encoder_attention) */
static void check_encoder_attention(void) {
    const int length = 37, heads = 2, head_dim = 64, width = heads * head_dim, padded = 64;
    float *source = randoms((size_t)length * 3 * width, 2.0f), *wide = malloc((size_t)length * width * sizeof(float));
    uint16_t *qkv = malloc((size_t)length * 3 * width * 2), *out = malloc((size_t)length * width * 2);
    uint16_t *scratch = malloc((size_t)2 * 2 * padded * head_dim * 2);
    for (size_t i = 0; i < (size_t)length * 3 * width; i++) source[i] = load1(&(uint16_t){to_bf16(source[i])}, 0, FMT_BF16);
    for (size_t i = 0; i < (size_t)length * 3 * width; i++) qkv[i] = to_bf16(source[i]);
    const float scaling = 0.125f;
    check(encoder_attention_bf16(qkv, length, heads, head_dim, scaling, out, scratch, 2) == 0, "attention runs");
    absorb(out, (size_t)length * width * 2);
    for (size_t i = 0; i < (size_t)length * width; i++) wide[i] = load1(out, i, FMT_BF16);
    check(attention_error(source, wide, length, heads, head_dim, scaling, 1) < 0.06,
          "encoder attention within 0.06 of float64");
}

/* encoder_attention_f32 within `bound` of float64 attention over the same float32 inputs (values of about `size`),
   at a length whose last block of keys is partial, with the same bits on one thread as on two (heads are
   independent) */
static void check_encoder_attention_f32(int int8, float size, double bound) {
    const int length = 45, heads = 2, head_dim = 64, width = heads * head_dim, padded = 64;
    float *qkv = randoms((size_t)length * 3 * width, size);
    float *out = malloc((size_t)length * width * sizeof(float)), *alone = malloc((size_t)length * width * sizeof(float));
    float *scratch = malloc((size_t)2 * 2 * padded * head_dim * sizeof(float));
    const float scaling = 0.125f;
    check(encoder_attention_f32(qkv, length, heads, head_dim, scaling, int8, out, scratch, 2) == 0,
          "f32 attention runs");
    check(encoder_attention_f32(qkv, length, heads, head_dim, scaling, int8, alone, scratch, 1) == 0,
          "f32 attention runs");
    check(memcmp(out, alone, (size_t)length * width * sizeof(float)) == 0, "f32 attention: one thread = two");
    absorb(out, (size_t)length * width * sizeof(float));
    const double worst = attention_error(qkv, out, length, heads, head_dim, scaling, 0);
    check(worst < bound, int8 == 2   ? "f32 attention with int8 scores and weights x values near float64"
                         : int8 ? "f32 attention with int8 scores near float64"
                                : "f32 attention near float64");
    free(qkv);
    free(out);
    free(alone);
    free(scratch);
}

int main(void) {
    const int formats[] = {FMT_F32, FMT_BF16, FMT_I8, FMT_I8_VNNI};
    for (int f = 0; f < 4; f++) check_linear(formats[f]);
    for (int f = 0; f < 4; f++) check_decoder(formats[f], FMT_F32, FMT_F32);
    check_decoder(FMT_F32, FMT_BF16, FMT_F32);
    check_decoder(FMT_I8_VNNI, FMT_F32, FMT_I8);
    check_certified_argmax(FMT_I8);
    check_certified_argmax(FMT_I8_VNNI);
    check_vnni_float();
    check_encoder_attention();
    check_encoder_attention_f32(0, 2.0f, 1e-5);
    check_encoder_attention_f32(1, 1.0f, 0.02);
    check_encoder_attention_f32(2, 1.0f, 0.03);
    check_encoder_int8(0);
    check_encoder_int8(1);
    if (failures) return 1;
    printf("ok %s %016llx\n", SIMD_ISA, (unsigned long long)digest);
    return 0;
}
