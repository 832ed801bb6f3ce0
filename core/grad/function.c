/* function.c -- C support for nodes whose backward is written in Lua (torch.autograd.Function). */
#include "grad.h"

mt_status mt_node_output_alias(mt_node *n, mt_tensor *t, int nr, mt_tensor **out) {
  if (!n) return mt_error(MT_EINVAL, "backward: no node");
  MT_TRY(mt_check_tensor(t, "backward", "saved tensor"));
  if (nr < 0 || nr >= n->nout) return mt_error(MT_ERANGE, "backward: output %d of a node with %d outputs", nr, n->nout);
  mt_tensor *a;
  MT_TRY(mt_tensor_alias(t, &a));
  mt_status s = mt_node_attach(n, a, nr);
  if (s) { mt_tensor_release(a); return s; }
  *out = a;
  return MT_OK;
}
