/* fuzz_onnx.c -- libFuzzer target: ONNX files (core/formats/onnx.c: mt_onnx_read, protobuf-c and
 * the flattening with its checks).
 *
 * An input is an ONNX file (seeds: spec/support/onnx/<name>.onnx, PyTorch 1.13's exports, copied by
 * fuzz/make_seeds.lua). A file that reads is walked whole: every node's strings and attributes, every
 * initializer's and attribute tensor's elements, the graph's inputs and outputs with their dims. Any
 * crash, ASan or UBSan report, leak, or broken invariant (abort) is a finding. */
#define _GNU_SOURCE
#include "moontorch.h"

#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

static int memfd = -1;
static char path[64];
static volatile size_t sink;

static void check(int ok, const char *what) {
  if (!ok) {
    fprintf(stderr, "fuzz_onnx: invariant broken: %s (last error: %s)\n", what, mt_last_error());
    abort();
  }
}

int LLVMFuzzerInitialize(int *argc, char ***argv) {
  (void)argc, (void)argv;
  mt_set_num_threads(1);
  memfd = memfd_create("fuzz_onnx", MFD_CLOEXEC);
  if (memfd < 0) {
    perror("memfd_create");
    abort();
  }
  snprintf(path, sizeof path, "/proc/self/fd/%d", memfd);
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
  check(ftruncate(memfd, 0) == 0, "ftruncate");
  check(pwrite(memfd, data, size, 0) == (ssize_t)size, "pwrite");
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
