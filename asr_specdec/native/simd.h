/* The SIMD layer the kernels are written against: a vector of 16 float32 lanes (vf), of 16 int32 lanes (vi), 64
   bytes as 16 lanes of 4 (vb) and a 16-lane mask (vmask), with the same inline functions in every build:
   simd_avx512.h (one register per vector), simd_avx2.h (two), simd_neon.h (four). A lane's result is the same
   operation in every build (fused multiply-adds, round-to-nearest-even conversions, reductions in one fixed tree),
   so a kernel's arithmetic per output element is fixed by the kernel source, not by the instruction set. The
   compiler's target flags pick the header (native/backend.py decides them). */
#ifndef ASR_SPECDEC_SIMD_H
#define ASR_SPECDEC_SIMD_H

#include <stdint.h>
#include <string.h>

#if defined(__AVX512F__)
#include "simd_avx512.h"
#elif defined(__AVX2__) && defined(__FMA__) && defined(__F16C__)
#include "simd_avx2.h"
#elif defined(__aarch64__) && defined(__ARM_NEON)
#include "simd_neon.h"
#else
#error "no SIMD layer for this target: build with -mavx512f... (avx512), -mavx2 -mfma -mf16c (avx2) or for aarch64"
#endif

#endif
