/* error.h -- errors (error.c): the last-error message of a failure, and the argument checks every op shares. Internal to the core. */
#ifndef MT_ERROR_H
#define MT_ERROR_H

#ifndef MT_BUILDING
#define MT_BUILDING 1
#endif
#include "moontorch.h"

#include <math.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdint.h>
#include <string.h>

/* ---------------------------------------------------------------- errors */
/* Record a specific message for the current thread and return `code`. */
mt_status mt_error(mt_status code, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
#define MT_TRY(expr)                    \
  do {                                  \
    mt_status mt_s_ = (expr);           \
    if (mt_s_ != MT_OK) return mt_s_;   \
  } while (0)

/* The numbering of dims/positions in messages (see mt_set_message_base): MT_D(d) shows dim d. */
extern int mt_msg_base;
#define MT_D(d) ((d) >= 0 ? (long long)(d) + mt_msg_base : (long long)(d))

/* The end of an out-of-range message about a position value v counted from `base`: where v is 0
 * and positions count from 1 (a PyTorch habit), says so; else "". */
#define MT_BASE_HINT(v, base) ((base) == 1 && (v) == 0 ? " (positions count from 1 here: PyTorch's 0 is 1)" : "")

/* "[2, 3]" into a thread-local ring of buffers (valid for a few calls). */
const char *mt_shape_str(const int64_t *sizes, int ndim);
#define MT_SHAPE(t) mt_shape_str((t)->_sizes, (t)->_ndim)

/* Argument checks shared by ops: each records "<op>: ..." and returns the status. */
/* a tensor argument: given, and on a device type there is (its fields are writable from Lua) */
mt_status mt_tensor_missing(const mt_tensor *t, const char *op, const char *arg);
static inline mt_status mt_check_tensor(const mt_tensor *t, const char *op, const char *arg) {
  return t && (uint32_t)t->_device_type < MT_DEVICE_TYPES ? MT_OK : mt_tensor_missing(t, op, arg);
}
mt_status mt_wrap_dim(int dim, int ndim, const char *op, int *out);
mt_status mt_check_sizes(const int64_t *sizes, int ndim, const char *op, int64_t *numel);

#endif
