/* fuzz_pytorch.c -- libFuzzer target: PyTorch's torch.save files (core/formats/pytorch.c, the zip
 * reader core/formats/zip.c and the restricted unpickler core/formats/pickle.c).
 *
 * An input is a file (seeds: the PyTorch 1.13 files of spec/support/pytorch/, copied by
 * fuzz/make_seeds.lua: zip archives and legacy files). It is read through a memfd (the reader takes
 * a path: /proc/self/fd/N):
 *  1. as it is;
 *  2. when it is a zip archive, with every entry's CRC-32 recomputed as a writer would have
 *     written it (central and local headers), so that mutations of data.pkl and of the storages
 *     get past the checksum to the unpickler and the tensor checks.
 * Every value of what loads is read out as lua/interop/pytorch.lua reads it: each node's fields,
 * items naming existing nodes, strings' bytes summed, and every tensor checked to lie inside its
 * storage and its elements read (all up to 64 Ki elements, else the first and the last). Any
 * crash, ASan or UBSan report, leak, or broken invariant (abort) is a finding. */
#define _GNU_SOURCE
#define FUZZ_NAME "fuzz_pytorch"
#include "fuzz_common.h"

static uint32_t crc_table[256];

int LLVMFuzzerInitialize(int *argc, char ***argv) {
  (void)argc, (void)argv;
  fuzz_init();
  for (uint32_t i = 0; i < 256; i++) {
    uint32_t c = i;
    for (int k = 0; k < 8; k++)
      c = c & 1 ? 0xEDB88320u ^ (c >> 1) : c >> 1;
    crc_table[i] = c;
  }
  return 0;
}

static uint32_t crc32_of(const uint8_t *p, size_t n) {
  uint32_t c = 0xFFFFFFFFu;
  for (size_t i = 0; i < n; i++)
    c = crc_table[(c ^ p[i]) & 0xFF] ^ (c >> 8);
  return c ^ 0xFFFFFFFFu;
}

static uint32_t rd32(const uint8_t *p) { return (uint32_t)p[0] | (uint32_t)p[1] << 8 | (uint32_t)p[2] << 16 | (uint32_t)p[3] << 24; }
static uint16_t rd16(const uint8_t *p) { return (uint16_t)(p[0] | p[1] << 8); }
static void wr32(uint8_t *p, uint32_t v) {
  for (int i = 0; i < 4; i++)
    p[i] = (uint8_t)(v >> (8 * i));
}

/* every entry's CRC-32 as a writer computes it (entries whose headers are out of bounds skipped);
 * 0 when f is not a zip archive with a plain end record */
static int repair(uint8_t *f, size_t n) {
  if (n < 22)
    return 0;
  size_t e = n - 22;
  for (;; e--) {
    if (rd32(f + e) == 0x06054b50u && e + 22 + rd16(f + e + 20) == n)
      break;
    if (e == 0 || n - e > 22 + 65535)
      return 0;
  }
  size_t cd = rd32(f + e + 16), cd_size = rd32(f + e + 12), count = rd16(f + e + 10);
  if (cd > n || cd_size > n - cd)
    return 0;
  size_t p = cd;
  for (size_t i = 0; i < count && p + 46 <= cd + cd_size; i++) {
    uint8_t *h = f + p;
    if (rd32(h) != 0x02014b50u)
      break;
    size_t nlen = rd16(h + 28), xlen = rd16(h + 30), clen = rd16(h + 32), size = rd32(h + 20), local = rd32(h + 42);
    if (local + 30 <= n && rd32(f + local) == 0x04034b50u) {
      size_t data = local + 30 + rd16(f + local + 26) + rd16(f + local + 28);
      if (data <= n && size <= n - data) {
        uint32_t c = crc32_of(f + data, size);
        wr32(h + 16, c);
        wr32(f + local + 14, c);
      }
    }
    p += 46 + nlen + xlen + clen;
  }
  return 1;
}

static void walk(mt_pt_file *f) {
  uint32_t n = mt_pt_count(f), root = mt_pt_root(f);
  check(root >= 1 && root <= n, "the root is a node");
  for (uint32_t id = 1; id <= n; id++) {
    mt_pt_value v;
    check(mt_pt_get(f, id, &v) == MT_OK, "every node can be read");
    switch (v.kind) {
    case MT_PT_STRING:
    case MT_PT_BYTES: {
      unsigned s = 0;
      for (int64_t i = 0; i < v.count; i++)
        s += (unsigned char)v.str[i];
      check(v.str[v.count] == 0, "strings are NUL-terminated");
      sink = s;
      break;
    }
    case MT_PT_LIST:
    case MT_PT_TUPLE:
    case MT_PT_SET:
    case MT_PT_DICT:
    case MT_PT_ORDERED_DICT: {
      int64_t k = v.kind == MT_PT_DICT || v.kind == MT_PT_ORDERED_DICT ? 2 * v.count : v.count;
      for (int64_t i = 0; i < k; i++)
        check(v.items[i] >= 1 && v.items[i] <= n, "items are nodes");
      check(v.metadata <= n, "metadata is a node");
      break;
    }
    case MT_PT_TENSOR:
    case MT_PT_STORAGE:
      check(v.tensor != NULL, "a tensor value has a tensor");
      touch_tensor(v.tensor);
      mt_tensor_release(v.tensor);
      break;
    case MT_PT_META_TENSOR:
      check(v.count >= 0 && v.count <= MT_MAX_DIMS, "a meta tensor's rank");
      for (int64_t i = 0; i < 2 * v.count; i++)
        check(v.sizes[i] >= 0, "a meta tensor's sizes");
      check(mt_dtype_valid(v.dtype), "a meta tensor's dtype");
      break;
    case MT_PT_INT:
    case MT_PT_FLOAT:
      sink = v.number;
      break;
    case MT_PT_DTYPE:
    case MT_PT_GLOBAL:
      check(v.str != NULL, "a global has a name");
      break;
    default:
      check(v.kind == MT_PT_NONE || v.kind == MT_PT_BOOL, "a known kind");
    }
  }
}

static void load(const uint8_t *data, size_t size) {
  fuzz_put(data, size);
  mt_pt_file *f = NULL;
  if (mt_pt_open(path, &f) != MT_OK) {
    check(f == NULL && mt_last_error()[0] != 0, "a refused file gives no reader and a message");
    return;
  }
  walk(f);
  mt_pt_close(f);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  load(data, size);
  if (size < 22)
    return 0;
  uint8_t *f = malloc(size);
  check(f != NULL, "malloc");
  memcpy(f, data, size);
  if (repair(f, size) && memcmp(f, data, size) != 0)
    load(f, size);
  free(f);
  return 0;
}
