/* fuzz_t7.c -- libFuzzer target: Torch7's serialisation (core/formats/t7.c).
 *
 * An input is a .t7 file (seeds: written by spec/support/t7_writer.lua through fuzz/make_seeds.lua:
 * nn modules, tensors and storages of every Torch7 type, references and cycles, functions, in the
 * binary format with 8- and 4-byte longs and in ASCII). It is read through a memfd (the reader takes
 * a path: /proc/self/fd/N) with the format told by its first bytes and the long size detected, then
 * every value of what loads is read out as lua/interop/t7.lua reads it: each node's fields, items
 * and children naming existing nodes, strings' bytes summed, and every tensor checked to lie inside
 * its storage and its elements read (all up to 64 Ki elements, else the first and the last). Any
 * crash, ASan or UBSan report, leak, or broken invariant (abort) is a finding. */
#define _GNU_SOURCE
#define FUZZ_NAME "fuzz_t7"
#include "fuzz_common.h"

int LLVMFuzzerInitialize(int *argc, char ***argv) {
  (void)argc, (void)argv;
  fuzz_init();
  return 0;
}

static void walk(mt_t7_file *f) {
  uint32_t n = mt_t7_count(f), root = mt_t7_root(f);
  check(root >= 1 && root <= n, "the root is a node");
  for (uint32_t id = 1; id <= n; id++) {
    mt_t7_value v;
    check(mt_t7_get(f, id, &v) == MT_OK, "every node can be read");
    switch (v.kind) {
    case MT_T7_STRING:
    case MT_T7_FUNCTION:
    case MT_T7_OBJECT: {
      unsigned s = 0;
      for (int64_t i = 0; i < v.count; i++)
        s += (unsigned char)v.str[i];
      check(v.str[v.count] == 0, "strings are NUL-terminated");
      check(v.child <= n, "a child is a node");
      sink = s;
      break;
    }
    case MT_T7_TABLE:
      for (int64_t i = 0; i < 2 * v.count; i++)
        check(v.items[i] >= 1 && v.items[i] <= n, "items are nodes");
      break;
    case MT_T7_TENSOR:
    case MT_T7_STORAGE:
      check(v.tensor != NULL, "a tensor value has a tensor");
      check(v.tensor->_dtype == v.dtype, "a tensor's dtype");
      touch_tensor(v.tensor);
      mt_tensor_release(v.tensor);
      break;
    case MT_T7_NUMBER:
    case MT_T7_BOOLEAN:
      sink = v.number;
      break;
    default:
      check(v.kind == MT_T7_NIL, "a known kind");
    }
  }
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  fuzz_put(data, size);
  mt_t7_file *f = NULL;
  if (mt_t7_open(path, MT_T7_AUTO, 0, &f) != MT_OK) {
    check(f == NULL && mt_last_error()[0] != 0, "a refused file gives no reader and a message");
    return 0;
  }
  walk(f);
  mt_t7_close(f);
  return 0;
}
