/* bag.c -- the CPU's embedding_bag kernels (issue 12, the modules part): each bag b is the entries
 * [starts[b], starts[b + 1]) of the indices; its row of the result is the sum (times the per-sample
 * weights), the mean or the elementwise maximum of the weight's rows at those indices, entries at
 * padding_idx left out, an empty bag giving zeros. The maximum's positions (the weight row each
 * element came from, -1 for an empty bag) are kept for the backward, which scatters the output
 * gradient back into a dense weight gradient (bag by bag, in order) and, for per-sample weights,
 * gives each entry the dot product of its bag's gradient with its row. */
#include "cpu.h"

#include <math.h>
#include <stdlib.h>

enum { BAG_SUM = 0, BAG_MEAN = 1, BAG_MAX = 2 };

typedef struct bag_job {
  const char *w, *psw;
  char *out;
  int64_t *arg;
  const int64_t *idx, *starts;
  int64_t D, pad, base;
  int mode, dt;
} bag_job;

#define BAG_FORWARD(T)                                                                           \
  static void bag_forward_##T(void *ctx, int64_t b0, int64_t b1) {                               \
    const bag_job *j = ctx;                                                                      \
    const int64_t D = j->D;                                                                      \
    const T *w = (const T *)j->w, *psw = (const T *)j->psw;                                      \
    for (int64_t b = b0; b < b1; b++) {                                                          \
      T *o = (T *)j->out + b * D;                                                                \
      int64_t *arg = j->arg ? j->arg + b * D : NULL;                                             \
      for (int64_t d = 0; d < D; d++) o[d] = 0;                                                  \
      if (arg)                                                                                   \
        for (int64_t d = 0; d < D; d++) arg[d] = -1;                                             \
      int64_t count = 0;                                                                         \
      for (int64_t i = j->starts[b]; i < j->starts[b + 1]; i++) {                                \
        int64_t r = j->idx[i] - j->base;                                                         \
        if (r == j->pad) continue;                                                               \
        const T *row = w + r * D;                                                                \
        if (j->mode == BAG_MAX) {                                                                \
          for (int64_t d = 0; d < D; d++)                                                        \
            if (count == 0 || row[d] > o[d] || isnan(row[d])) {                                  \
              o[d] = row[d];                                                                     \
              arg[d] = r;                                                                        \
            }                                                                                    \
        } else if (psw) {                                                                        \
          const T s = psw[i];                                                                    \
          for (int64_t d = 0; d < D; d++) o[d] += s * row[d];                                    \
        } else {                                                                                 \
          for (int64_t d = 0; d < D; d++) o[d] += row[d];                                        \
        }                                                                                        \
        count++;                                                                                 \
      }                                                                                          \
      if (j->mode == BAG_MEAN && count > 0) {                                                    \
        const T c = (T)count;                                                                    \
        for (int64_t d = 0; d < D; d++) o[d] /= c;                                               \
      }                                                                                          \
    }                                                                                            \
  }
BAG_FORWARD(float)
BAG_FORWARD(double)

mt_status mt_cpu_embedding_bag(mt_tensor *out, mt_tensor *max_arg, const mt_tensor *weight, const mt_tensor *indices,
                               const mt_tensor *starts, const mt_tensor *psw, int mode, int64_t padding_idx,
                               int64_t base) {
  int64_t V = weight->_sizes[0], n = indices->_numel, B = starts->_numel - 1;
  const int64_t *idx = (const int64_t *)indices->_data;
  for (int64_t i = 0; i < n; i++)
    if (idx[i] - base < 0 || idx[i] - base >= V)
      return mt_error(MT_ERANGE, "embedding_bag: index out of range in self (index %lld, %lld rows)%s",
                      (long long)idx[i], (long long)V, MT_BASE_HINT(idx[i], base));
  bag_job j = {.w = weight->_data, .psw = psw ? psw->_data : NULL, .out = out->_data,
               .arg = max_arg ? (int64_t *)max_arg->_data : NULL, .idx = idx,
               .starts = (const int64_t *)starts->_data, .D = weight->_sizes[1], .pad = padding_idx, .base = base,
               .mode = mode, .dt = weight->_dtype};
  mt_range_fn fn = weight->_dtype == MT_FLOAT32 ? bag_forward_float : bag_forward_double;
  int64_t grain = j.D >= MT_GRAIN ? 1 : MT_GRAIN / (j.D ? j.D : 1);
  if (B >= 2 * grain) mt_parallel_for(B, grain, fn, &j);
  else if (B > 0) fn(&j, 0, B);
  return MT_OK;
}

#define BAG_BACKWARD(T)                                                                                           \
  static void bag_backward_##T(T *gw, T *gpsw, const T *g, const T *w, const T *psw, const int64_t *idx,         \
                               const int64_t *starts, const int64_t *arg, int64_t B, int64_t V, int64_t D,       \
                               int64_t n, int mode, int64_t pad, int64_t base, int scale_by_freq) {              \
    int64_t *freq = NULL;                                                                                          \
    if (scale_by_freq && (freq = calloc((size_t)(V ? V : 1), sizeof(int64_t))))                                   \
      for (int64_t i = 0; i < n; i++) freq[idx[i] - base]++;                                                      \
    if (gw)                                                                                                        \
      for (int64_t i = 0; i < V * D; i++) gw[i] = 0;                                                              \
    for (int64_t b = 0; b < B; b++) {                                                                              \
      const T *gb = g + b * D;                                                                                     \
      if (mode == BAG_MAX) {                                                                                       \
        if (gw)                                                                                                    \
          for (int64_t d = 0; d < D; d++) {                                                                        \
            int64_t r = arg[b * D + d];                                                                            \
            if (r >= 0) gw[r * D + d] += freq ? gb[d] / (T)freq[r] : gb[d];                                        \
          }                                                                                                        \
        continue;                                                                                                  \
      }                                                                                                            \
      int64_t count = 0;                                                                                           \
      for (int64_t i = starts[b]; i < starts[b + 1]; i++)                                                          \
        if (idx[i] - base != pad) count++;                                                                         \
      const T scale = mode == BAG_MEAN && count > 0 ? (T)1 / (T)count : (T)1;                                      \
      for (int64_t i = starts[b]; i < starts[b + 1]; i++) {                                                        \
        int64_t r = idx[i] - base;                                                                                 \
        if (r == pad) {                                                                                            \
          if (gpsw) gpsw[i] = 0;                                                                                   \
          continue;                                                                                                \
        }                                                                                                          \
        if (gw) {                                                                                                  \
          T s = scale * (psw ? psw[i] : (T)1);                                                                     \
          if (freq) s /= (T)freq[r];                                                                               \
          T *row = gw + r * D;                                                                                     \
          for (int64_t d = 0; d < D; d++) row[d] += s * gb[d];                                                     \
        }                                                                                                          \
        if (gpsw) {                                                                                                \
          double dot = 0;                                                                                          \
          const T *row = w + r * D;                                                                                \
          for (int64_t d = 0; d < D; d++) dot += (double)gb[d] * (double)row[d];                                   \
          gpsw[i] = (T)dot;                                                                                        \
        }                                                                                                          \
      }                                                                                                            \
    }                                                                                                              \
    free(freq);                                                                                                    \
  }
BAG_BACKWARD(float)
BAG_BACKWARD(double)

mt_status mt_cpu_embedding_bag_backward(mt_tensor *gw, mt_tensor *gpsw, const mt_tensor *g, const mt_tensor *weight,
                                        const mt_tensor *indices, const mt_tensor *starts, const mt_tensor *psw,
                                        const mt_tensor *max_arg, int mode, int64_t padding_idx, int64_t base,
                                        int scale_grad_by_freq) {
  int64_t B = starts->_numel - 1, V = weight->_sizes[0], D = weight->_sizes[1], n = indices->_numel;
  const int64_t *idx = (const int64_t *)indices->_data, *st = (const int64_t *)starts->_data;
  const int64_t *arg = max_arg ? (const int64_t *)max_arg->_data : NULL;
  if (weight->_dtype == MT_FLOAT32)
    bag_backward_float(gw ? (float *)gw->_data : NULL, gpsw ? (float *)gpsw->_data : NULL, (const float *)g->_data,
                       (const float *)weight->_data, psw ? (const float *)psw->_data : NULL, idx, st, arg, B, V, D, n,
                       mode, padding_idx, base, scale_grad_by_freq);
  else
    bag_backward_double(gw ? (double *)gw->_data : NULL, gpsw ? (double *)gpsw->_data : NULL,
                        (const double *)g->_data, (const double *)weight->_data,
                        psw ? (const double *)psw->_data : NULL, idx, st, arg, B, V, D, n, mode, padding_idx, base,
                        scale_grad_by_freq);
  return MT_OK;
}
