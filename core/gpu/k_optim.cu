/* k_optim.cu -- the fused optimizer steps (SGD, Adam/AdamW, RMSprop, Adagrad, Adadelta, Adamax): one kernel
 * per rule, an element a thread, in the CPU's order of operations (core/tensor/sgd.c, adam.c, adaptive.c)
 * in the parameter's dtype. */
#include "math.cuh"

namespace MT_GPU_NS {

template <typename T> MT_DEV T *op(const mt_gpu_iter &it, int k, int64_t i) {
  return (T *)it.data[k] + (it.flat ? i * it.inc[k] : iter_offset(it, k, i));
}

template <typename T> __global__ void optim_kernel(mt_gpu_optim o, mt_gpu_iter it) {
  const int64_t step = (int64_t)gridDim.x * blockDim.x;
  const T c0 = (T)o.c[0], c1 = (T)o.c[1], c2 = (T)o.c[2], c3 = (T)o.c[3], c4 = (T)o.c[4], c5 = (T)o.c[5];
  const T c6 = (T)o.c[6], c7 = (T)o.c[7], c8 = (T)o.c[8], c9 = (T)o.c[9];
  for (int64_t i = (int64_t)blockIdx.x * blockDim.x + threadIdx.x; i < it.numel; i += step) {
    T *p = op<T>(it, 0, i);
    const T g = *op<T>(it, 1, i);
    switch (o.rule) {
    case MT_GPU_SGD: { /* c: nlr, mom, damp1, wd, sign */
      T d = c4 * g;
      if (o.wd_on) d = d + c3 * *p;
      if (o.mode == 1) {
        *op<T>(it, 2, i) = d;
        d = o.flags ? d + c1 * d : d;
      } else if (o.mode == 2) {
        T *b = op<T>(it, 2, i);
        T nb = *b * c1;
        nb = nb + c2 * d;
        *b = nb;
        d = o.flags ? d + c1 * nb : nb;
      }
      *p = *p + c0 * d;
      break;
    }
    case MT_GPU_ADAM: { /* c: sign, decay, wd, b1, omb1, b2, omb2, bc2s, eps, nss */
      T gi = c0 * g, pi = *p;
      if (o.mode == 2) pi = pi * c1;
      if (o.mode == 1) gi = gi + c2 * pi;
      T *m = op<T>(it, 2, i), *v = op<T>(it, 3, i);
      T mi = *m * c3;
      mi = mi + c4 * gi;
      *m = mi;
      T vi = *v * c5;
      vi = vi + c6 * gi * gi;
      *v = vi;
      if (o.flags) {
        T *x = op<T>(it, 4, i);
        T xi = *x;
        xi = (xi > vi || xi != xi) ? xi : vi;
        *x = xi;
        vi = xi;
      }
      T denom = m_sqrt(vi) / c7 + c8;
      *p = pi + c9 * mi / denom;
      break;
    }
    case MT_GPU_RMSPROP: { /* c: sign, wd, alpha, oma, eps, mom, nlr; operands p g s [a] [b] */
      T gi = c0 * g, pi = *p;
      if (o.wd_on) gi = gi + c1 * pi;
      T *s = op<T>(it, 2, i);
      T si = *s * c2;
      si = si + c3 * gi * gi;
      *s = si;
      T avg;
      int k = 3;
      if (o.flags & 1) {
        T *a = op<T>(it, k++, i);
        T ai = *a * c2;
        ai = ai + c3 * gi;
        *a = ai;
        avg = si + (T)-1 * ai * ai;
        avg = m_sqrt(avg);
      } else {
        avg = m_sqrt(si);
      }
      avg = avg + c4;
      if (o.flags & 2) {
        T *b = op<T>(it, k, i);
        T bi = *b * c5;
        bi = bi + (T)1 * gi / avg;
        *b = bi;
        *p = pi + c6 * bi;
      } else {
        *p = pi + c6 * gi / avg;
      }
      break;
    }
    case MT_GPU_ADAGRAD: { /* c: sign, wd, eps, nclr */
      T gi = c0 * g, pi = *p;
      if (o.wd_on) gi = gi + c1 * pi;
      T *s = op<T>(it, 2, i);
      T si = *s + (T)1 * gi * gi;
      *s = si;
      T sd = m_sqrt(si) + c2;
      *p = pi + c3 * gi / sd;
      break;
    }
    default: { /* adadelta, adamax; c: sign, wd, r, omr, b2, eps, nlr */
      T gi = c0 * g, pi = *p;
      if (o.wd_on) gi = gi + c1 * pi;
      T *a = op<T>(it, 2, i), *b = op<T>(it, 3, i);
      if (o.rule == MT_GPU_ADAMAX) {
        T mi = *a * c2;
        mi = mi + c3 * gi;
        *a = mi;
        T ui = *b * c4;
        T ag = (gi < 0 ? -gi : gi) + c5;
        ui = (ui > ag || ui != ui) ? ui : ag;
        *b = ui;
        *p = pi + c6 * mi / ui;
      } else {
        T si = *a * c2;
        si = si + c3 * gi * gi;
        *a = si;
        T sd = m_sqrt(si + c5);
        T di = *b;
        T delta = m_sqrt(di + c5) / sd * gi;
        di = di * c2;
        di = di + c3 * delta * delta;
        *b = di;
        *p = pi + c6 * delta;
      }
    }
    }
  }
}

static int optim(const mt_gpu_optim *o, const mt_gpu_iter *it, void *stream) {
  if (it->numel == 0) return 0;
  dim3 g(blocks_for(it->numel)), b(THREADS);
  if (it->dtype[0] == MT_FLOAT32) mt_launch(optim_kernel<float>, g, b, 0, stream, *o, *it);
  else if (it->dtype[0] == MT_FLOAT64) mt_launch(optim_kernel<double>, g, b, 0, stream, *o, *it);
  else return -1;
  return 0;
}

int launch_optim(const mt_gpu_optim *o, const mt_gpu_iter *it, void *stream) { return optim(o, it, stream); }

} // namespace MT_GPU_NS
