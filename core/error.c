/* error.c -- status codes and the per-thread last-error message. */
#include "error.h"

#include <stdio.h>

static _Thread_local char last_error[1024];
int mt_msg_base;
void mt_set_message_base(int base) { mt_msg_base = base; }

mt_status mt_error(mt_status code, const char *fmt, ...) {
  va_list ap;
  va_start(ap, fmt);
  vsnprintf(last_error, sizeof last_error, fmt, ap);
  va_end(ap);
  return code;
}

const char *mt_last_error(void) { return last_error; }
void mt_clear_error(void) { last_error[0] = 0; }

const char *mt_status_string(mt_status s) {
#define MT_STATUS_TEXT_(name, text) case MT_##name: return text;
  switch (s) {
    MT_STATUS_LIST(MT_STATUS_TEXT_)
    default: return "unknown status";
  }
#undef MT_STATUS_TEXT_
}

const char *mt_shape_str(const int64_t *sizes, int ndim) {
  static _Thread_local char ring[8][160];
  static _Thread_local int next;
  char *buf = ring[next++ & 7];
  size_t len = 0;
  buf[len++] = '[';
  for (int i = 0; i < ndim && len < 140; i++)
    len += (size_t)snprintf(buf + len, 160 - len, i ? ", %lld" : "%lld", (long long)sizes[i]);
  if (len < 159) buf[len++] = ']';
  buf[len] = 0;
  return buf;
}

mt_status mt_tensor_missing(const mt_tensor *t, const char *op, const char *arg) {
  if (t) return mt_error(MT_EDEVICE, "%s: '%s' has an unknown device type %d", op, arg, (int)t->_device_type);
  return mt_error(MT_EINVAL, "%s: expected a tensor for '%s', got nothing", op, arg);
}

mt_status mt_wrap_dim(int dim, int ndim, const char *op, int *out) {
  int n = ndim > 0 ? ndim : 1; /* a scalar accepts dims 0 and -1, as PyTorch does */
  if (dim < -n || dim >= n)
    return mt_error(MT_ERANGE, "%s: dimension %lld out of range (expected to be in range of [%d, %lld])", op, MT_D(dim),
                    -n, MT_D(n - 1));
  *out = dim < 0 ? dim + n : dim;
  return MT_OK;
}

mt_status mt_check_sizes(const int64_t *sizes, int ndim, const char *op, int64_t *numel) {
  if (ndim < 0 || ndim > MT_MAX_DIMS)
    return mt_error(MT_EINVAL, "%s: %d dimensions requested, at most %d are supported", op, ndim, MT_MAX_DIMS);
  int64_t n = 1, span = 1; /* span: the product of the sizes counted as at least 1, what strides reach */
  for (int i = 0; i < ndim; i++) {
    if (sizes[i] < 0)
      return mt_error(MT_EINVAL, "%s: negative dimension %lld in size %s", op, (long long)sizes[i],
                      mt_shape_str(sizes, ndim));
    if (sizes[i] > 1 && span > INT64_MAX / sizes[i])
      return mt_error(MT_EINVAL, "%s: size %s has too many elements", op, mt_shape_str(sizes, ndim));
    if (sizes[i] > 1) span *= sizes[i];
    n *= sizes[i];
  }
  *numel = n;
  return MT_OK;
}
