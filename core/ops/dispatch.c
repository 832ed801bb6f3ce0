/* dispatch.c -- what the front doors share: grad mode, the autograd wrappers' table, and wrapped
 * numbers. */
#include "dispatch.h"

int mt_grad_mode = 1;
int mt_inference_mode;
mt_autograd_ops mt_autograd;

void mt_set_grad_enabled(int on) { mt_grad_mode = on != 0; }
int mt_is_grad_enabled(void) { return mt_grad_mode; }
void mt_set_inference_mode(int on) { mt_inference_mode = on != 0; }
int mt_is_inference_mode(void) { return mt_inference_mode; }

static mt_storage wrapped_storage = {1, NULL, 0, MT_CPU, 0, 0, MT_STORAGE_EXTERNAL, 0, NULL, NULL};
void mt_wrapped_number(mt_tensor *t, double *buf, double s, int kind) {
  memset(t, 0, offsetof(mt_tensor, _sizes));
  t->_refcount = 1 << 30; /* never freed */
  t->_storage = &wrapped_storage;
  t->_numel = 1;
  t->_ndim = 0;
  t->_flags = MT_TENSOR_CONTIGUOUS | MT_TENSOR_WRAPPED_NUMBER;
  if (kind == 0) { t->_dtype = MT_BOOL; *(uint8_t *)buf = s != 0; }
  else if (kind == 1) { t->_dtype = MT_INT64; *(int64_t *)buf = (int64_t)s; }
  else { t->_dtype = MT_FLOAT64; *buf = s; }
  t->_data = (char *)buf;
}
