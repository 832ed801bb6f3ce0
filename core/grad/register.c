/* register.c -- the autograd layer plugs into the core when the library loads: the allocator
 * learns how to release a tensor's autograd metadata, the dispatch layer gets every op family's
 * wrappers. And the list of every grad_fn name the core can give, walked by the specs. */
#include "node.h"

#include <stdlib.h>

/* each op family's wrappers and kinds of node (core/grad/<family>.c) */
void mt_grad_register_elementwise(mt_autograd_ops *t);
void mt_grad_register_copy(mt_autograd_ops *t);
void mt_grad_register_view(mt_autograd_ops *t);
void mt_grad_register_reduce(mt_autograd_ops *t);
void mt_grad_register_index(mt_autograd_ops *t);
void mt_grad_register_sort(mt_autograd_ops *t);
void mt_grad_register_linalg(mt_autograd_ops *t);
extern const mt_node_kind *const mt_elementwise_kinds[], *const mt_copy_kinds[], *const mt_view_kinds[],
    *const mt_reduce_kinds[], *const mt_index_kinds[], *const mt_sort_kinds[], *const mt_linalg_kinds[];
/* issue 12, pooling */
void mt_grad_register_pool(mt_autograd_ops *t);
extern const mt_node_kind *const mt_pool_kinds[];
/* issue 12, conv part */
void mt_grad_register_conv(mt_autograd_ops *t);
extern const mt_node_kind *const mt_conv_kinds[];
/* recurrent layers (issue 12, rnn part) */
void mt_grad_register_rnn(mt_autograd_ops *t);
extern const mt_node_kind *const mt_rnn_kinds[];
/* issue 12, the modules part: the fused layer norm (core/grad/norm.c) */
void mt_grad_register_norm(mt_autograd_ops *t);
void mt_grad_register_loss(mt_autograd_ops *t);
void mt_grad_register_ctc(mt_autograd_ops *t);
void mt_grad_register_bag(mt_autograd_ops *t);
extern const mt_node_kind *const mt_norm_kinds[], *const mt_loss_kinds[], *const mt_ctc_kinds[], *const mt_bag_kinds[];
/* issue 24: the CSR product (core/grad/sparse.c) */
void mt_grad_register_sparse(mt_autograd_ops *t);
extern const mt_node_kind *const mt_sparse_kinds[];
/* torch.distributions' samplers (core/grad/samplers.c) */
void mt_grad_register_samplers(mt_autograd_ops *t);
extern const mt_node_kind *const mt_samplers_kinds[];

__attribute__((constructor)) static void grad_register(void) {
  mt_autograd_release = mt_meta_free;
  mt_grad_register_elementwise(&mt_autograd);
  mt_grad_register_copy(&mt_autograd);
  mt_grad_register_view(&mt_autograd);
  mt_grad_register_reduce(&mt_autograd);
  mt_grad_register_index(&mt_autograd);
  mt_grad_register_sort(&mt_autograd);
  mt_grad_register_linalg(&mt_autograd);
  mt_grad_register_pool(&mt_autograd); /* issue 12, pooling */
  /* issue 12, conv part */
  mt_grad_register_conv(&mt_autograd);
  mt_grad_register_rnn(&mt_autograd); /* recurrent layers (issue 12, rnn part) */
  mt_grad_register_norm(&mt_autograd); /* issue 12, the modules part */
  mt_grad_register_loss(&mt_autograd);
  mt_grad_register_ctc(&mt_autograd);
  mt_grad_register_bag(&mt_autograd);
  mt_grad_register_sparse(&mt_autograd); /* issue 24 */
  mt_grad_register_samplers(&mt_autograd);
}

/* ---------------------------------------------------------------- the list of names */
static const char *all_names[512];
static int n_all_names = -1;

static void add_name(const char *s) {
  if (!s || !*s) return;
  for (int i = 0; i < n_all_names; i++)
    if (!strcmp(all_names[i], s)) return;
  if (n_all_names < (int)(sizeof all_names / sizeof all_names[0])) all_names[n_all_names++] = s;
}

static void add_kinds(const mt_node_kind *const *kinds) {
  for (int k = 0; kinds[k]; k++) {
    const mt_node_kind *kind = kinds[k];
    if (kind->names)
      for (int i = 0; kind->names(i); i++) add_name(kind->names(i));
    else
      add_name(kind->name);
  }
}

static void build_names(void) {
  n_all_names = 0;
  const mt_node_kind *const own[] = {&mt_accumulate_grad_kind, &mt_lua_function_kind, NULL};
  add_kinds(own);
  add_kinds(mt_elementwise_kinds);
  add_kinds(mt_copy_kinds);
  add_kinds(mt_view_kinds);
  add_kinds(mt_reduce_kinds);
  add_kinds(mt_index_kinds);
  add_kinds(mt_sort_kinds);
  add_kinds(mt_linalg_kinds);
  add_kinds(mt_pool_kinds); /* issue 12, pooling */
  /* issue 12, conv part */
  add_kinds(mt_conv_kinds);
  add_kinds(mt_rnn_kinds); /* recurrent layers (issue 12, rnn part) */
  add_kinds(mt_norm_kinds); /* issue 12, the modules part */
  add_kinds(mt_loss_kinds);
  add_kinds(mt_ctc_kinds);
  add_kinds(mt_bag_kinds);
  add_kinds(mt_sparse_kinds); /* issue 24 */
  add_kinds(mt_samplers_kinds);
}

int mt_grad_op_count(void) {
  if (n_all_names < 0) build_names();
  return n_all_names;
}

const char *mt_grad_op_list_name(int i) {
  if (n_all_names < 0) build_names();
  return i >= 0 && i < n_all_names ? all_names[i] : NULL;
}
