/* optable.c -- the op list of core/moontorch.h (MT_OP_LIST) as tables: what mt_op_info_of tells
 * the Lua bindings and the specs, and what the layers above read through core/optable.h. */
#include "optable.h"
#include "kernels.h"

#define KIND_(ID, name, kind, ...) MT_KIND_##kind,
const unsigned char mt_op_kinds[MT_OP_COUNT] = {MT_OP_LIST(KIND_)};
#undef KIND_

/* the kernel slot of each op, MT_SLOT_none for none */
#define SLOT_(ID, name, kind, arity, grad, kernel, ...) MT_SLOT_##kernel,
const signed char mt_op_slots[MT_OP_COUNT] = {MT_OP_LIST(SLOT_)};
#undef SLOT_

#define NAME_(ID, name, ...) #name,
const char *const mt_op_names[MT_OP_COUNT] = {MT_OP_LIST(NAME_)};
#undef NAME_

#define DIFF 1
#define NODIFF 0
#define GRAD_(ID, name, kind, arity, grad, ...) grad,
const bool mt_op_differentiable[MT_OP_COUNT] = {MT_OP_LIST(GRAD_)};
#undef GRAD_

#define INFO_(ID, name, kind, arity, grad, kernel, binding, params, aliases) \
  {#name, #kind, arity, grad, #kernel, #binding, params, aliases},
static const mt_op_info infos[MT_OP_COUNT] = {MT_OP_LIST(INFO_)};
#undef INFO_

int mt_op_count(void) { return MT_OP_COUNT; }
const mt_op_info *mt_op_info_of(int op) { return mt_op_valid(op) ? &infos[op] : NULL; }
const char *mt_op_name(int op) { return mt_op_valid(op) ? mt_op_names[op] : "?"; }
