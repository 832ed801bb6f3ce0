/* fuzz_onnx.c -- libFuzzer target: ONNX files (core/formats/onnx.c: mt_onnx_read, protobuf-c and
 * the flattening with its checks).
 *
 * An input is an ONNX file (seeds: spec/support/onnx/<name>.onnx, PyTorch 1.13's exports, copied by
 * fuzz/make_seeds.lua). A file that reads is walked whole: every node's strings and attributes, every
 * initializer's and attribute tensor's elements, the graph's inputs and outputs with their dims. Any
 * crash, ASan or UBSan report, leak, or broken invariant (abort) is a finding. */
#define _GNU_SOURCE
#define FUZZ_NAME "fuzz_onnx"
#include "fuzz_common.h"

int LLVMFuzzerInitialize(int *argc, char ***argv) {
  (void)argc, (void)argv;
  fuzz_init();
  return 0;
}

static void tensor(const mt_tensor *t) {
  check(t && t->_device_type == MT_CPU && t->_numel >= 0, "a tensor");
  if (t->_numel > 0 && t->_numel <= (1 << 16)) {
    double *v = malloc((size_t)t->_numel * sizeof *v);
    check(v && mt_tensor_to_doubles(t, v, t->_numel) == MT_OK, "a tensor's values");
    sink += (size_t)(v[t->_numel - 1] == v[0]);
    free(v);
  }
}

static void value(const mt_onnx_value *v) {
  sink += strlen(v->name);
  check(v->ndim >= -1 && v->ndim <= 64, "a value's dims");
  for (int d = 0; d < v->ndim; d++)
    sink += (size_t)v->dims[d];
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  fuzz_put(data, size);
  mt_onnx_model *m = NULL;
  if (mt_onnx_read(path, &m) != MT_OK) {
    check(m == NULL && mt_last_error()[0] != 0, "a refused file gives no model and a message");
    return 0;
  }
  for (int i = 0; i < m->nnodes; i++) {
    const mt_onnx_node *n = &m->nodes[i];
    sink += strlen(n->op_type) + strlen(n->domain) + strlen(n->name);
    for (int k = 0; k < n->ninputs; k++)
      sink += strlen(n->inputs[k]);
    for (int k = 0; k < n->noutputs; k++)
      sink += strlen(n->outputs[k]);
    for (int k = 0; k < n->nattrs; k++) {
      const mt_onnx_attr *a = &n->attrs[k];
      sink += strlen(a->name) + (size_t)a->slen;
      if (a->slen > 0)
        sink += (size_t)a->s[a->slen - 1];
      if (a->type == 4)
        tensor(a->t);
      for (int64_t j = 0; j < a->n && a->type == 7; j++)
        sink += (size_t)a->ints[j];
      for (int64_t j = 0; j < a->n && a->type == 6; j++)
        sink += (size_t)(a->floats[j] > 0);
    }
  }
  for (int i = 0; i < m->ninits; i++) {
    sink += strlen(m->init_names[i]);
    tensor(m->inits[i]);
  }
  for (int i = 0; i < m->ninputs; i++)
    value(&m->inputs[i]);
  for (int i = 0; i < m->noutputs; i++)
    value(&m->outputs[i]);
  mt_onnx_free(m);
  return 0;
}
