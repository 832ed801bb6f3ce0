/* parity.c -- front doors added by the parity session: the in-place view ops' one primitive
 * (mt_set_view_, moontorch.h). */
#include "dispatch.h"

#include <string.h>

mt_status mt_set_view_(mt_tensor *t, const mt_tensor *view, const char *op) {
  if (!op) op = "set_view_";
  MT_TRY(mt_check_tensor(t, op, "self"));
  MT_TRY(mt_check_tensor(view, op, "view"));
  if (t->_storage != view->_storage || t->_dtype != view->_dtype)
    return mt_error(MT_EINVAL, "%s: the new view must be of the tensor's own storage and dtype", op);
  if (t->_flags & MT_TENSOR_REQUIRES_GRAD)
    return mt_error(MT_ENOTIMPL,
                    "%s: an in-place view op on a tensor that requires grad is not supported (use the out-of-place "
                    "op: x = x:%.*s(...))",
                    op, (int)(strlen(op) > 0 ? strlen(op) - 1 : 0), op);
  t->_ndim = view->_ndim;
  memcpy(t->_sizes, view->_sizes, sizeof(int64_t) * (size_t)view->_ndim);
  memcpy(t->_strides, view->_strides, sizeof(int64_t) * (size_t)view->_ndim);
  t->_offset = view->_offset;
  mt_tensor_refresh(t);
  return MT_OK;
}
