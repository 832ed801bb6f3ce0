/* nn.c -- the CUDA backend's slots of the layers: layer norm, nll_loss, im2col/col2im, max pools, linear
 * resamplings, the pools' indices, the LSTM and GRU gate steps, embedding_bag; their geometry and the
 * small tables (pool windows, resampling taps) copied to the device with the launch. */
#include "gpu.h"

#include <stdlib.h>

static mt_status no_kernel(const char *op, int dtype) {
  return mt_error(MT_EDTYPE, "%s: not implemented for '%s' on device cuda", op, mt_dtype_name(dtype));
}

/* host data into device scratch of device `dev` (freed by the caller after the launch) */
static mt_status upload(int dev, void *stream, const void *host, size_t n, const char *op, void **out) {
  *out = mt_gpu_malloc(dev, n ? n : 8, stream, op);
  if (!*out) return MT_ENOMEM;
  int code = n ? mt_gpu_rt->memcpy_async(*out, host, n, MT_GPU_H2D, stream) : 0;
  if (code) {
    mt_gpu_free(*out);
    *out = NULL;
    return mt_gpu_error(code, op);
  }
  return MT_OK;
}

/* ---------------------------------------------------------------- layer norm */
mt_status mt_gpu_layer_norm(mt_tensor *out, mt_tensor *mean, mt_tensor *rstd, const mt_tensor *x, const mt_tensor *w,
                            const mt_tensor *b, int64_t m, int64_t n, double eps) {
  mt_gpu_ln l = {.m = m, .n = n, .eps = eps, .dtype = x->_dtype, .out = out->_data, .mean = mean ? mean->_data : NULL,
                 .rstd = rstd ? rstd->_data : NULL, .x = x->_data, .w = w ? w->_data : NULL, .b = b ? b->_data : NULL};
  if (mt_gpu_k->layer_norm(&l, 0, mt_gpu_stream_of(out))) return no_kernel("layer_norm", x->_dtype);
  return MT_OK;
}

mt_status mt_gpu_layer_norm_backward(mt_tensor *gx, mt_tensor *gw, mt_tensor *gb, const mt_tensor *g, const mt_tensor *x,
                                     const mt_tensor *mean, const mt_tensor *rstd, const mt_tensor *w, int64_t m,
                                     int64_t n) {
  mt_gpu_ln l = {.m = m, .n = n, .dtype = x->_dtype, .gx = gx ? gx->_data : NULL, .gw = gw ? gw->_data : NULL,
                 .gb = gb ? gb->_data : NULL, .x = x->_data, .w = w ? w->_data : NULL, .g = g->_data,
                 .fmean = mean->_data, .frstd = rstd->_data};
  if (mt_gpu_k->layer_norm(&l, 1, mt_gpu_stream_of(x))) return no_kernel("layer_norm_backward", x->_dtype);
  return MT_OK;
}

/* ---------------------------------------------------------------- nll_loss */
/* The slot hands the total weight back to the host: the forward waits for the device (a target out of
 * bounds is then this call's error). */
mt_status mt_gpu_nll_loss(mt_tensor *out, double *total_weight, const mt_tensor *input, const mt_tensor *target,
                          const mt_tensor *weight, int64_t ignore_index, int reduction, int64_t base) {
  void *s = mt_gpu_stream_of(input);
  int dev = input->_device_index;
  double *tw = mt_gpu_malloc(dev, 8, s, "nll_loss");
  if (!tw) return MT_ENOMEM;
  mt_gpu_nll l = {.n = target->_numel, .c = input->_sizes[input->_ndim - 1], .ignore = ignore_index, .base = base,
                  .reduction = reduction, .dtype = input->_dtype, .out = out->_data, .tw = tw, .x = input->_data,
                  .w = weight ? weight->_data : NULL, .target = (const int64_t *)target->_data,
                  .fault = mt_gpu_fault_of(dev)};
  mt_status st = MT_OK;
  if (mt_gpu_k->nll(&l, 0, s)) st = no_kernel("nll_loss", input->_dtype);
  if (st == MT_OK) st = mt_gpu_read(dev, total_weight, tw, 8, "nll_loss");
  mt_gpu_free(tw);
  return st;
}

mt_status mt_gpu_nll_loss_backward(mt_tensor *gin, const mt_tensor *g, const mt_tensor *target,
                                   const mt_tensor *weight, int64_t ignore_index, int reduction, double total_weight,
                                   int64_t base) {
  MT_TRY(mt_gpu_fill(gin, 0));
  mt_gpu_nll l = {.n = target->_numel, .c = gin->_sizes[gin->_ndim - 1], .ignore = ignore_index, .base = base,
                  .reduction = reduction, .dtype = gin->_dtype, .gin = gin->_data, .g = g->_data,
                  .w = weight ? weight->_data : NULL, .target = (const int64_t *)target->_data,
                  .total_weight = total_weight};
  if (mt_gpu_k->nll(&l, 1, mt_gpu_stream_of(gin))) return no_kernel("nll_loss_backward", gin->_dtype);
  return MT_OK;
}

/* ---------------------------------------------------------------- im2col, col2im */
static void conv_of(mt_gpu_conv *c, const mt_tensor *image, const mt_conv_geo *g) {
  memset(c, 0, sizeof *c);
  c->N = image->_sizes[0];
  c->C = image->_sizes[1];
  int off = 3 - g->nsp;
  for (int i = 0; i < 3; i++) {
    int src = i - off;
    bool real = src >= 0;
    c->in[i] = real ? g->in[src] : 1;
    c->out[i] = real ? g->out[src] : 1;
    c->k[i] = real ? g->k[src] : 1;
    c->s[i] = real ? g->s[src] : 1;
    c->p[i] = real ? g->p[src] : 0;
    c->d[i] = real ? g->d[src] : 1;
  }
  c->dtype = image->_dtype;
}

mt_status mt_gpu_im2col(mt_tensor *cols, const mt_tensor *image, const mt_conv_geo *g) {
  mt_gpu_conv c;
  conv_of(&c, image, g);
  c.cols = cols->_data;
  c.image = image->_data;
  if (mt_gpu_k->conv(&c, 0, mt_gpu_stream_of(cols))) return no_kernel("im2col", image->_dtype);
  return MT_OK;
}

mt_status mt_gpu_col2im(mt_tensor *image, const mt_tensor *cols, const mt_conv_geo *g) {
  mt_gpu_conv c;
  conv_of(&c, image, g);
  c.cols = cols->_data;
  c.image = image->_data;
  if (mt_gpu_k->conv(&c, 1, mt_gpu_stream_of(image))) return no_kernel("col2im", image->_dtype);
  return MT_OK;
}

/* ---------------------------------------------------------------- pools and resamplings */
mt_status mt_gpu_pool_max(mt_tensor *values, mt_tensor *indices, const mt_tensor *x, const mt_windows *w,
                          int64_t base) {
  int64_t oplane = w->out[0] * w->out[1] * w->out[2];
  int64_t P = oplane ? values->_numel / oplane : 0;
  if (P == 0 || oplane == 0) return MT_OK;
  int dev = x->_device_index;
  void *s = mt_gpu_stream_of(x);
  int64_t n = 2 * (w->out[0] + w->out[1] + w->out[2]);
  int64_t *host = malloc((size_t)n * 8);
  if (!host) return mt_error(MT_ENOMEM, "max_pool: out of memory");
  mt_gpu_pool p = {.P = P, .x = x->_data, .v = values->_data, .idx = indices ? (int64_t *)indices->_data : NULL,
                   .base = base, .dtype = x->_dtype};
  int64_t at = 0;
  for (int d = 0; d < 3; d++) {
    p.in[d] = w->in[d];
    p.out[d] = w->out[d];
    p.step[d] = w->step[d];
    memcpy(host + at, w->start[d], (size_t)w->out[d] * 8);
    memcpy(host + at + w->out[d], w->count[d], (size_t)w->out[d] * 8);
    at += 2 * w->out[d];
  }
  void *devp = NULL;
  mt_status st = upload(dev, s, host, (size_t)n * 8, "max_pool", &devp);
  free(host);
  if (st) return st;
  at = 0;
  for (int d = 0; d < 3; d++) {
    p.start[d] = (const int64_t *)devp + at;
    p.count[d] = (const int64_t *)devp + at + w->out[d];
    at += 2 * w->out[d];
  }
  if (mt_gpu_k->pool_max(&p, s)) st = no_kernel("max_pool", x->_dtype);
  mt_gpu_free(devp);
  return st;
}

mt_status mt_gpu_resample_slot(mt_tensor *out, const mt_tensor *x, const mt_taps *t, int adjoint) {
  int64_t plane = t->in[0] * t->in[1] * t->in[2], oplane = t->out[0] * t->out[1] * t->out[2];
  int64_t P = adjoint ? (plane ? out->_numel / plane : 0) : (oplane ? out->_numel / oplane : 0);
  if (P == 0) return MT_OK;
  if (adjoint) MT_TRY(mt_gpu_fill(out, 0));
  if (adjoint && oplane == 0) return MT_OK;
  int dev = out->_device_index;
  void *s = mt_gpu_stream_of(out);
  int64_t n = 0;
  for (int d = 0; d < 3; d++) n += t->out[d] * t->ntaps[d];
  char *host = malloc((size_t)(n ? n : 1) * 16);
  if (!host) return mt_error(MT_ENOMEM, "resample: out of memory");
  mt_gpu_resample r = {.P = P, .box = t->box, .adjoint = adjoint, .dtype = out->_dtype, .scale = t->scale,
                       .x = x->_data, .out_ = out->_data};
  int64_t at = 0;
  for (int d = 0; d < 3; d++) {
    r.in[d] = t->in[d];
    r.out[d] = t->out[d];
    r.ntaps[d] = t->ntaps[d];
    int64_t k = t->out[d] * t->ntaps[d];
    memcpy(host + at * 8, t->index[d], (size_t)k * 8);
    memcpy(host + (n + at) * 8, t->weight[d], (size_t)k * 8);
    at += k;
  }
  void *devp = NULL;
  mt_status st = upload(dev, s, host, (size_t)n * 16, "resample", &devp);
  free(host);
  if (st) return st;
  at = 0;
  for (int d = 0; d < 3; d++) {
    r.index[d] = (const int64_t *)devp + at;
    r.weight[d] = (const double *)((const int64_t *)devp + n) + at;
    at += t->out[d] * t->ntaps[d];
  }
  if (mt_gpu_k->resample(&r, s)) st = no_kernel("resample", out->_dtype);
  mt_gpu_free(devp);
  return st;
}

_Static_assert((int)MT_GPU_POOL_SCATTER_ADD == (int)MT_POOL_SCATTER_ADD &&
                   (int)MT_GPU_POOL_SCATTER_SET == (int)MT_POOL_SCATTER_SET &&
                   (int)MT_GPU_POOL_GATHER == (int)MT_POOL_GATHER,
               "pool_index kinds");

mt_status mt_gpu_pool_index_slot(mt_tensor *out, const mt_tensor *src, const mt_tensor *indices, int kind, int64_t base) {
  int64_t P = indices->_ndim ? indices->_sizes[0] : 1;
  if (P == 0) return MT_OK;
  int64_t K = indices->_numel / P;
  int64_t M = (kind == MT_POOL_GATHER ? src->_numel : out->_numel) / P;
  if (kind != MT_POOL_GATHER) MT_TRY(mt_gpu_fill(out, 0));
  if (K == 0) return MT_OK;
  mt_gpu_pool_index p = {.P = P, .M = M, .K = K, .base = base, .kind = kind, .dtype = out->_dtype, .out = out->_data,
                         .src = src->_data, .idx = (const int64_t *)indices->_data,
                         .fault = mt_gpu_fault_of(out->_device_index)};
  if (mt_gpu_k->pool_index(&p, mt_gpu_stream_of(out))) return no_kernel("max_unpool", out->_dtype);
  return MT_OK;
}

/* ---------------------------------------------------------------- recurrent gates */
static void rnn_set(mt_gpu_rnn *r, int k, const mt_tensor *t) {
  r->t[k] = t ? t->_data : NULL;
  r->rs[k] = t && t->_ndim == 2 ? t->_strides[0] : 0;
}
static mt_status rnn_run(mt_gpu_rnn *r, const mt_tensor *on, const char *op) {
  r->dtype = on->_dtype;
  if (mt_gpu_k->rnn(r, mt_gpu_stream_of(on))) return no_kernel(op, on->_dtype);
  return MT_OK;
}

mt_status mt_gpu_lstm_cell(mt_tensor *hy, mt_tensor *cy, mt_tensor *ws, const mt_tensor *ig, const mt_tensor *hg,
                           const mt_tensor *cx, const mt_tensor *bi, const mt_tensor *bh) {
  mt_gpu_rnn r = {.B = hy->_sizes[0], .H = hy->_sizes[1], .kind = MT_GPU_LSTM};
  const mt_tensor *ops[8] = {hy, cy, ws, ig, hg, cx, bi, bh};
  for (int k = 0; k < 8; k++) rnn_set(&r, k, ops[k]);
  return rnn_run(&r, hy, "lstm_cell");
}

mt_status mt_gpu_lstm_cell_backward(mt_tensor *dgates, mt_tensor *dcx, const mt_tensor *dhy, const mt_tensor *dcy,
                                    const mt_tensor *cx, const mt_tensor *cy, const mt_tensor *ws) {
  mt_gpu_rnn r = {.B = dcx->_sizes[0], .H = dcx->_sizes[1], .kind = MT_GPU_LSTM_BACKWARD};
  const mt_tensor *ops[7] = {dgates, dcx, dhy, dcy, cx, cy, ws};
  for (int k = 0; k < 7; k++) rnn_set(&r, k, ops[k]);
  return rnn_run(&r, dcx, "lstm_cell_backward");
}

mt_status mt_gpu_gru_cell(mt_tensor *hy, mt_tensor *ws, const mt_tensor *ig, const mt_tensor *hg, const mt_tensor *hx,
                          const mt_tensor *bi, const mt_tensor *bh) {
  mt_gpu_rnn r = {.B = hy->_sizes[0], .H = hy->_sizes[1], .kind = MT_GPU_GRU};
  const mt_tensor *ops[7] = {hy, ws, ig, hg, hx, bi, bh};
  for (int k = 0; k < 7; k++) rnn_set(&r, k, ops[k]);
  return rnn_run(&r, hy, "gru_cell");
}

mt_status mt_gpu_gru_cell_backward(mt_tensor *dig, mt_tensor *dhg, mt_tensor *dhx, const mt_tensor *dhy,
                                   const mt_tensor *hx, const mt_tensor *ws) {
  mt_gpu_rnn r = {.B = dhx->_sizes[0], .H = dhx->_sizes[1], .kind = MT_GPU_GRU_BACKWARD};
  const mt_tensor *ops[6] = {dig, dhg, dhx, dhy, hx, ws};
  for (int k = 0; k < 6; k++) rnn_set(&r, k, ops[k]);
  return rnn_run(&r, dhx, "gru_cell_backward");
}

/* ---------------------------------------------------------------- embedding_bag */
mt_status mt_gpu_embedding_bag(mt_tensor *out, mt_tensor *max_arg, const mt_tensor *weight, const mt_tensor *indices,
                               const mt_tensor *starts, const mt_tensor *psw, int mode, int64_t pad, int64_t base) {
  mt_gpu_bag j = {.B = starts->_numel - 1, .V = weight->_sizes[0], .D = weight->_sizes[1], .n = indices->_numel,
                  .pad = pad, .base = base, .mode = mode, .dtype = weight->_dtype, .w = weight->_data,
                  .psw = psw ? psw->_data : NULL, .out = out->_data, .arg = max_arg ? (int64_t *)max_arg->_data : NULL,
                  .idx = (const int64_t *)indices->_data, .starts = (const int64_t *)starts->_data,
                  .fault = mt_gpu_fault_of(out->_device_index)};
  if (mt_gpu_k->bag(&j, 0, mt_gpu_stream_of(out))) return no_kernel("embedding_bag", weight->_dtype);
  return MT_OK;
}

mt_status mt_gpu_embedding_bag_backward(mt_tensor *gw, mt_tensor *gpsw, const mt_tensor *g, const mt_tensor *weight,
                                        const mt_tensor *indices, const mt_tensor *starts, const mt_tensor *psw,
                                        const mt_tensor *max_arg, int mode, int64_t pad, int64_t base,
                                        int scale_grad_by_freq) {
  int dev = weight->_device_index;
  void *s = mt_gpu_stream_of(weight);
  mt_gpu_bag j = {.B = starts->_numel - 1, .V = weight->_sizes[0], .D = weight->_sizes[1], .n = indices->_numel,
                  .pad = pad, .base = base, .mode = mode, .dtype = weight->_dtype, .scale_by_freq = scale_grad_by_freq,
                  .w = weight->_data, .psw = psw ? psw->_data : NULL, .g = g->_data, .gw = gw ? gw->_data : NULL,
                  .gpsw = gpsw ? gpsw->_data : NULL, .arg_in = max_arg ? (const int64_t *)max_arg->_data : NULL,
                  .idx = (const int64_t *)indices->_data, .starts = (const int64_t *)starts->_data};
  if (gw) MT_TRY(mt_gpu_fill(gw, 0));
  mt_tensor *freq = NULL;
  if (scale_grad_by_freq) {
    int64_t V = j.V;
    MT_TRY(mt_gpu_new(dev, &V, 1, MT_INT64, "embedding_bag_backward", &freq));
    mt_status st = mt_gpu_fill(freq, 0);
    if (st) {
      mt_tensor_release(freq);
      return st;
    }
    j.freq = (int64_t *)freq->_data;
  }
  mt_status st = MT_OK;
  if (mt_gpu_k->bag(&j, 1, s)) st = no_kernel("embedding_bag_backward", weight->_dtype);
  if (freq) mt_tensor_release(freq);
  return st;
}

/* ---------------------------------------------------------------- ctc_loss */
static mt_status ctc_run(mt_gpu_ctc *c, const mt_tensor *on, int backward, const char *op) {
  int dev = on->_device_index;
  void *s = mt_gpu_stream_of(on);
  size_t table = (size_t)c->N * (size_t)(c->T ? c->T : 1) * (size_t)(2 * c->S + 1) * 8;
  c->alpha = mt_gpu_malloc(dev, table, s, op);
  c->beta = c->alpha && backward ? mt_gpu_malloc(dev, table, s, op) : NULL;
  c->ll = c->alpha ? mt_gpu_malloc(dev, (size_t)(c->N ? c->N : 1) * 8, s, op) : NULL;
  mt_status st = MT_OK;
  if (!c->alpha || !c->ll || (backward && !c->beta)) st = MT_ENOMEM;
  else if (mt_gpu_k->ctc(c, backward, s)) st = no_kernel(op, c->dtype);
  mt_gpu_free(c->alpha);
  mt_gpu_free(c->beta);
  mt_gpu_free(c->ll);
  return st;
}

mt_status mt_gpu_ctc_loss(mt_tensor *out, const mt_tensor *log_probs, const mt_tensor *targets,
                          const mt_tensor *input_lengths, const mt_tensor *target_lengths, int64_t blank,
                          int zero_infinity, int64_t base) {
  mt_gpu_ctc c = {.T = log_probs->_sizes[0], .N = log_probs->_sizes[1], .C = log_probs->_sizes[2],
                  .S = targets->_sizes[1], .blank = blank, .base = base, .dtype = log_probs->_dtype,
                  .zero_inf = zero_infinity, .lp = log_probs->_data, .out = out->_data,
                  .tg = (const int64_t *)targets->_data, .il = (const int64_t *)input_lengths->_data,
                  .tl = (const int64_t *)target_lengths->_data};
  return ctc_run(&c, log_probs, 0, "ctc_loss");
}

mt_status mt_gpu_ctc_loss_backward(mt_tensor *gin, const mt_tensor *g, const mt_tensor *log_probs,
                                   const mt_tensor *targets, const mt_tensor *input_lengths,
                                   const mt_tensor *target_lengths, int64_t blank, int64_t base) {
  mt_gpu_ctc c = {.T = log_probs->_sizes[0], .N = log_probs->_sizes[1], .C = log_probs->_sizes[2],
                  .S = targets->_sizes[1], .blank = blank, .base = base, .dtype = log_probs->_dtype,
                  .lp = log_probs->_data, .g = g->_data, .out = gin->_data, .tg = (const int64_t *)targets->_data,
                  .il = (const int64_t *)input_lengths->_data, .tl = (const int64_t *)target_lengths->_data};
  return ctc_run(&c, log_probs, 1, "ctc_loss_backward");
}
