/* optable.c -- facts about the ops, derived from the op lists of core/moontorch.h: their names. */
#include "mt_internal.h"

static const char *const unary_names[] = {
#define X(NAME, name) #name,
    MT_UNARY_OP_LIST(X)
#undef X
};
static const char *const binary_names[] = {
#define X(NAME, name) #name,
    MT_BINARY_OP_LIST(X)
#undef X
};
static const char *const reduce_names[] = {
#define X(NAME, name) #name,
    MT_REDUCE_OP_LIST(X)
#undef X
};
const char *mt_unary_op_name(int op) { return op >= 0 && op < MT_UNARY_OP_COUNT ? unary_names[op] : "?"; }
const char *mt_binary_op_name(int op) { return op >= 0 && op < MT_BINARY_OP_COUNT ? binary_names[op] : "?"; }
const char *mt_reduce_op_name(int op) { return op >= 0 && op < MT_REDUCE_OP_COUNT ? reduce_names[op] : "?"; }
