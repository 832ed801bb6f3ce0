/* cpu.h -- the CPU backend's kernels (core/tensor/), shared among its files: the strided
 * iterator (iter.h), the vectorised float32 loops, and each file's kernels, which cpu.c gathers
 * into the CPU's kernel table. Kernels only compute (core/kernels.h); nothing here knows of autograd or
 * of the dispatch layer. */
#ifndef MT_CPU_H
#define MT_CPU_H

#include "../kernels.h"
#include "../optable.h"
#include "iter.h"

/* ---------------------------------------------------------------- the kernels */
/* each file's kernels, named mt_cpu_<slot>, gathered by cpu.c into the CPU backend's table */
#define MT_CPU_KERNEL_DECL_(slot, params) mt_status mt_cpu_##slot params;
MT_KERNEL_LIST(MT_CPU_KERNEL_DECL_)
#undef MT_CPU_KERNEL_DECL_

/* ---------------------------------------------------------------- helpers for kernels */
/* (random.c) a double uniform in [0, 1) and a double standard normal from a CPU generator, drawn as
 * PyTorch's CPU generator draws them (the caller holds the generator's lock): samplers.c's draws */
double mt_cpu_draw_uniform(mt_generator *gen);
double mt_cpu_draw_normal(mt_generator *gen);
/* A contiguous copy of `a` on the CPU (a new reference to `a` itself when already contiguous). */
mt_status mt_cpu_contiguous(const mt_tensor *a, const char *op, mt_tensor **out);
/* A new contiguous copy of `a` in dtype `dtype`. */
mt_status mt_cpu_convert(const mt_tensor *a, int dtype, const char *op, mt_tensor **out);
/* The bytes of `value` stored as `dtype` (8 bytes of room). */
static inline void mt_cpu_encode(int dtype, double value, char *bytes) { mt_store_double(dtype, bytes, value); }

/* ---------------------------------------------------------------- oneDNN's convolutions (onednn.c) */
/* A float32 convolution (or its weight's gradient) by oneDNN's primitives, arguments as the slots'
 * (mt_cpu_convolution, mt_cpu_conv_weight_grad in conv.c); MT_ENOTIMPL, with nothing recorded, where
 * oneDNN does not take it (not loaded, not float32, a shape it is not faster on, MT_CONV=own): the
 * caller then runs its own kernels. */
mt_status mt_onednn_convolution(mt_tensor *out, const mt_tensor *x, const mt_tensor *w, const mt_tensor *bias,
                                const mt_conv_args *a);
mt_status mt_onednn_conv_weight_grad(mt_tensor *gw, const mt_tensor *gout, const mt_tensor *x, const mt_conv_args *a);

/* ---------------------------------------------------------------- vectorised float32 math (vmath.c) */
/* The unary ops with a vectorised float32 loop for contiguous data: X(OP, name), MT_OP_##OP. */
#define MT_VMATH_OPS(X)                                                                                              \
  X(EXP, exp) X(LOG, log) X(TANH, tanh) X(SIGMOID, sigmoid) X(EXPM1, expm1) X(LOG1P, log1p) X(SILU, silu)           \
  X(GELU_TANH, gelu_tanh) X(SOFTPLUS, softplus)
typedef void (*mt_vmath_fn)(float *out, const float *in, int64_t n);
/* out[i] = op(in[i]) for n contiguous floats (out may be in); NULL when the op has no such loop or the CPU
 * lacks AVX2+FMA (or MOONTORCH_VMATH=0 is set). The AVX-512 loop (vmath512.c) where the CPU has AVX-512
 * and the op one, unless MOONTORCH_VMATH=avx2. */
mt_vmath_fn mt_vmath_f32(mt_op op);
/* speed: the AVX-512 loops (exp, log, tanh, sigmoid); NULL for other ops. Call only where
 * mt_cpu_kernel_level() (cpu.h) is MT_CPU_LEVEL_AVX512. */
mt_vmath_fn mt_vmath512_f32(mt_op op);

/* ---------------------------------------------------------------- bfloat16 products (bf16.c) */
/* C (M x N bfloat16, strides crs, ccs) = alpha * A @ B + beta * C, A (M x K) and B (K x N) bfloat16 of any
 * strides, K >= 1: float32 accumulation in vdpbf16ps's order on every path (bf16.c's top comment). */
mt_status mt_cpu_bf16_gemm(int64_t M, int64_t N, int64_t K, float alpha, const uint16_t *A, int64_t ars, int64_t acs,
                           const uint16_t *B, int64_t brs, int64_t bcs, float beta, uint16_t *C, int64_t crs,
                           int64_t ccs);
/* float32 <-> bfloat16 / float16 over n contiguous elements (lowp.c): dtype.c's bits, vectorised */
void mt_cpu_f32_to_bf16(uint16_t *d, const float *s, int64_t n);
void mt_cpu_bf16_to_f32(float *d, const uint16_t *s, int64_t n);
void mt_cpu_f32_to_f16(uint16_t *d, const float *s, int64_t n);
void mt_cpu_f16_to_f32(float *d, const uint16_t *s, int64_t n);
/* the same as the copy kernel's iterator loops (mt_loop_fn) */
void mt_cpu_loop_f32_to_bf16(void *ctx, char **p, const int64_t *st, int64_t n);
void mt_cpu_loop_bf16_to_f32(void *ctx, char **p, const int64_t *st, int64_t n);
void mt_cpu_loop_f32_to_f16(void *ctx, char **p, const int64_t *st, int64_t n);
void mt_cpu_loop_f16_to_f32(void *ctx, char **p, const int64_t *st, int64_t n);
void mt_cpu_loop_bool_to_bf16(void *ctx, char **p, const int64_t *st, int64_t n);
void mt_cpu_loop_bool_to_f16(void *ctx, char **p, const int64_t *st, int64_t n);

#endif
