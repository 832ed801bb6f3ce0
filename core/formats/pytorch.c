/* pytorch.c -- PyTorch's torch.save files (torch/serialization.py of PyTorch 1.13, read for the facts):
 *
 * The zip format (PyTorch >= 1.6; what torch.save writes by default): a zip archive whose entries
 * all sit under one folder `<name>/`, stored uncompressed:
 *   <name>/data.pkl     the pickled object (protocol 2); each storage is a persistent id
 *                       ('storage', <storage class>, key, location, numel)
 *   <name>/data/<key>   each storage's bytes (little-endian; at least numel x item size)
 *   <name>/version      the format version ("3\n")
 *   <name>/byteorder    (PyTorch 2.x) "little" or "big"
 * The legacy format (torch.save(..., _use_new_zipfile_serialization=False), and PyTorch < 1.6):
 * five pickles one after the other, then the storages' bytes:
 *   the magic number 0x1950a86a20f9469cfc6c, the protocol version 1001, the system info
 *   {'protocol_version', 'little_endian', 'type_sizes'}, the object (persistent ids
 *   ('storage', <class>, root key, location, numel, view) with view None or (key, offset, numel)),
 *   the sorted list of storage keys; then for each key in that order an int64 element count and
 *   the elements (in the byte order the system info names).
 * (The tar format of PyTorch before 0.4 and TorchScript archives are recognised and refused.)
 *
 * Storages are read into uint8 tensors (one per key); every tensor is a view of one, its dtype
 * the storage class's, checked to lie inside the storage's elements. Tensors are made while the
 * file is opened, so that a damaged file fails there. */
#include "formats.h"

#include <errno.h>
#include <fcntl.h>
#include <stdlib.h>
#include <sys/stat.h>
#include <unistd.h>

#define OP "load_pytorch"

typedef struct pt_key {
  char *name;
  int dtype;       /* the first persistent id's: the legacy format counts the bytes in its elements */
  uint64_t need;   /* bytes the persistent ids reach */
  uint32_t node;   /* the storage node of the first whole-storage id */
  int used;        /* legacy: its bytes were read */
  mt_tensor *bytes;
} pt_key;

struct mt_pt_file {
  char *path;
  int legacy;
  int big_endian;
  pk_graph g;
  uint32_t root;
  pt_key *keys;
  size_t nkeys, kcap;
  uint32_t *slots; /* hash: key name -> index + 1 */
  size_t nslots;
};

#define BAD(...) mt_fmt_error(MT_EFORMAT, OP, f->path, __VA_ARGS__)

static mt_status oom(mt_pt_file *f) { return mt_error(MT_ENOMEM, OP ": %s: out of memory", f->path); }

/* ------------------------------------------------------------------ storage keys */
static uint64_t fnv(const char *s, size_t n) {
  uint64_t h = 1469598103934665603ull;
  for (size_t i = 0; i < n; i++)
    h = (h ^ (unsigned char)s[i]) * 1099511628211ull;
  return h;
}

static mt_status key_slot(mt_pt_file *f, const char *name, size_t n, int create, size_t *index) {
  if ((f->nkeys + 1) * 2 > f->nslots) {
    size_t ns = f->nslots ? f->nslots * 2 : 64;
    uint32_t *slots = calloc(ns, sizeof *slots);
    if (!slots)
      return oom(f);
    for (size_t k = 0; k < f->nkeys; k++) {
      size_t h = fnv(f->keys[k].name, strlen(f->keys[k].name)) & (ns - 1);
      while (slots[h])
        h = (h + 1) & (ns - 1);
      slots[h] = (uint32_t)(k + 1);
    }
    free(f->slots);
    f->slots = slots;
    f->nslots = ns;
  }
  size_t h = fnv(name, n) & (f->nslots - 1);
  while (f->slots[h]) {
    pt_key *k = &f->keys[f->slots[h] - 1];
    if (strlen(k->name) == n && memcmp(k->name, name, n) == 0) {
      *index = f->slots[h] - 1;
      return MT_OK;
    }
    h = (h + 1) & (f->nslots - 1);
  }
  if (!create) {
    *index = SIZE_MAX;
    return MT_OK;
  }
  if (f->nkeys == f->kcap) {
    size_t cap = f->kcap ? f->kcap * 2 : 16;
    pt_key *keys = realloc(f->keys, cap * sizeof *keys);
    if (!keys)
      return oom(f);
    f->keys = keys;
    f->kcap = cap;
  }
  pt_key *k = &f->keys[f->nkeys];
  memset(k, 0, sizeof *k);
  if (!(k->name = malloc(n + 1)))
    return oom(f);
  memcpy(k->name, name, n);
  k->name[n] = 0;
  k->dtype = -1;
  f->slots[h] = (uint32_t)(f->nkeys + 1);
  *index = f->nkeys++;
  return MT_OK;
}

/* ------------------------------------------------------------------ persistent ids */
static int is_str(const pk_node *x, const char *s) {
  return (x->kind == MT_PT_STRING || x->kind == MT_PT_BYTES) && x->n == strlen(s) && memcmp(x->p, s, x->n) == 0;
}

static mt_status int_of(mt_pt_file *f, const pk_node *x, const char *what, int64_t *v) {
  if (x->kind != MT_PT_INT || !(x->flags & 1) || x->i < 0)
    return BAD("a storage's %s is not a non-negative integer", what);
  *v = x->i;
  return MT_OK;
}

/* ('storage', class, key, location, numel[, view]) -> a storage node */
static mt_status persistent(void *ctx, pk_graph *g, uint32_t pid, uint32_t *out) {
  mt_pt_file *f = ctx;
  pk_node *t = pk_at(g, pid);
  if (t->kind != MT_PT_TUPLE || t->n < 1)
    return BAD("a persistent id that is not a tuple");
  uint32_t *it = t->p;
  pk_node *tag = pk_at(g, it[0]);
  if (!is_str(tag, "storage")) {
    char shown[64] = "?";
    if (tag->kind == MT_PT_STRING || tag->kind == MT_PT_BYTES)
      mt_fmt_printable(shown, sizeof shown, tag->p, tag->n);
    return BAD("a persistent id of type '%s': only storages are read", shown);
  }
  uint32_t want = f->legacy ? 6 : 5;
  if (t->n != want)
    return BAD("a storage's persistent id has %u items (%u expected)", t->n, want);
  pk_node *cls = pk_at(g, it[1]), *key = pk_at(g, it[2]), *numel_n = pk_at(g, it[4]);
  if (!pk_is_storage_type(cls))
    return BAD("a storage whose class is not a storage class");
  int dt = cls->dtype;
  if (dt < 0)
    return BAD("a storage of type %s, which moontorch has no dtype for", pk_global_name(cls->aux));
  if (key->kind != MT_PT_STRING && key->kind != MT_PT_BYTES)
    return BAD("a storage whose key is not a string");
  int64_t numel = 0, off = 0, vnumel;
  MT_TRY(int_of(f, numel_n, "size", &numel));
  vnumel = numel;
  if (f->legacy) {
    pk_node *view = pk_at(g, it[5]);
    if (view->kind == MT_PT_TUPLE && view->n == 3) {
      MT_TRY(int_of(f, pk_at(g, ((uint32_t *)view->p)[1]), "view offset", &off));
      MT_TRY(int_of(f, pk_at(g, ((uint32_t *)view->p)[2]), "view size", &vnumel));
      if (off > numel || vnumel > numel - off)
        return BAD("a storage view reaches past its storage");
    } else if (view->kind != MT_PT_NONE) {
      return BAD("a storage's view is neither None nor (key, offset, size)");
    }
  }
  size_t idx;
  MT_TRY(key_slot(f, key->p, key->n, 1, &idx));
  pt_key *k = &f->keys[idx];
  uint64_t bytes;
  if (__builtin_mul_overflow((uint64_t)numel, (uint64_t)mt_itemsize(dt), &bytes))
    return BAD("a storage too large");
  if (k->dtype < 0)
    k->dtype = dt;
  if (bytes > k->need)
    k->need = bytes;
  if (k->node && off == 0 && vnumel == numel && pk_at(g, k->node)->dtype == dt && pk_at(g, k->node)->j == numel) {
    *out = k->node; /* the same storage again: the same value */
    return MT_OK;
  }
  /* a new storage node (added through the graph's own allocator: one more value) */
  if (g->n >= g->cap) {
    uint32_t cap = g->cap ? g->cap * 2 : 64;
    if (g->cap >= (1u << 30))
      return BAD("too many values");
    pk_node *nodes = realloc(g->nodes, (size_t)cap * sizeof *nodes);
    if (!nodes)
      return oom(f);
    g->nodes = nodes;
    g->cap = cap;
  }
  uint32_t id = g->n++;
  pk_node *s = pk_at(g, id);
  memset(s, 0, sizeof *s);
  s->kind = MT_PT_STORAGE;
  s->dtype = (int16_t)dt;
  s->aux = (uint32_t)idx;
  s->i = off;
  s->j = vnumel;
  if (!k->node && off == 0 && vnumel == numel)
    k->node = id;
  *out = id;
  return MT_OK;
}

/* ------------------------------------------------------------------ tensors */
static void swap_bytes(unsigned char *p, uint64_t n, size_t item) {
  if (item < 2)
    return;
  for (uint64_t i = 0; i + item <= n; i += item)
    for (size_t a = 0, b = item - 1; a < b; a++, b--) {
      unsigned char c = p[i + a];
      p[i + a] = p[i + b];
      p[i + b] = c;
    }
}

/* every tensor node made: a view of its storage's bytes, inside the storage's elements */
static mt_status make_tensors(mt_pt_file *f) {
  pk_graph *g = &f->g;
  for (uint32_t id = 1; id < g->n; id++) {
    pk_node *x = pk_at(g, id);
    if (x->kind != MT_PT_TENSOR)
      continue;
    pk_node *s = pk_at(g, x->aux);
    pt_key *k = &f->keys[s->aux];
    if (!k->bytes)
      return BAD("storage '%s' has no data", k->name);
    int64_t *geo = x->p, off = geo[0], nd = geo[1], *sizes = geo + 2, *strides = geo + 2 + nd;
    /* inside [0, numel) of the storage (its elements s->j, from element s->i of the bytes) */
    int64_t numel = 1, last = off;
    for (int d = 0; d < nd; d++) {
      int64_t reach;
      if (__builtin_mul_overflow(numel, sizes[d], &numel))
        return BAD("a tensor's size overflows");
      if (sizes[d] > 0 &&
          (__builtin_mul_overflow(sizes[d] - 1, strides[d], &reach) || __builtin_add_overflow(last, reach, &last)))
        return BAD("a tensor's extent overflows");
    }
    if (numel > 0 ? last >= s->j : off > s->j)
      return BAD("a tensor lies outside its storage ('%s': %lld elements)", k->name, (long long)s->j);
    mt_tensor base;
    memset(&base, 0, sizeof base);
    base._storage = k->bytes->_storage;
    base._dtype = x->dtype;
    base._device_type = MT_CPU;
    MT_TRY(mt_new_view(&base, sizes, strides, (int)nd, s->i + off, &x->t));
    if (x->flags & MT_PT_PARAMETER)
      x->t->_flags |= MT_TENSOR_PARAMETER;
  }
  return MT_OK;
}

/* a storage's bytes tensor of n bytes */
static mt_status new_bytes(mt_pt_file *f, pt_key *k, uint64_t n) {
  if (n > (uint64_t)INT64_MAX)
    return BAD("a storage too large");
  int64_t sz = (int64_t)n;
  return mt_tensor_empty(&sz, 1, MT_UINT8, NULL, &k->bytes);
}

/* ------------------------------------------------------------------ the zip format */
static mt_status read_zip(mt_pt_file *f, int fd, uint64_t fsize) {
  mt_zip z;
  MT_TRY(mt_zip_open(&z, fd, fsize, OP, f->path));
  mt_status st = MT_OK;
  unsigned char *pkl = NULL;
  char name[1200];
  /* the folder: the one X with X/data.pkl */
  const char *prefix = NULL;
  size_t plen = 0;
  int torchscript = 0;
  for (size_t i = 0; i < z.n; i++) {
    const char *nm = z.e[i].name, *slash = strchr(nm, '/');
    if (!slash)
      continue;
    if (strcmp(slash, "/data.pkl") == 0) {
      if (prefix) {
        st = BAD("a zip archive with several data.pkl records");
        goto done;
      }
      prefix = nm;
      plen = (size_t)(slash - nm);
    }
    if (strcmp(slash, "/constants.pkl") == 0 || strncmp(slash, "/code/", 6) == 0)
      torchscript = 1;
  }
  if (!prefix || torchscript) {
    st = torchscript ? BAD("a TorchScript archive (torch.jit.save): it holds code, which moontorch does not run; "
                           "save the weights with torch.save(model.state_dict(), path) instead")
                     : BAD("a zip archive without data.pkl: not a file torch.save wrote");
    goto done;
  }
  if (plen > 1000) {
    st = BAD("an archive folder name too long");
    goto done;
  }
  memcpy(name, prefix, plen);
  /* version: a number PyTorch reads (1 to 10) */
  snprintf(name + plen, sizeof name - plen, "/version");
  const mt_zip_entry *e = mt_zip_find(&z, name);
  if (e) {
    char v[16] = {0};
    if (e->size == 0 || e->size > 15) {
      st = BAD("a damaged version record");
      goto done;
    }
    if ((st = mt_zip_read(&z, e, v)) != MT_OK)
      goto done;
    char *endp;
    long ver = strtol(v, &endp, 10);
    if (endp == v || (*endp && *endp != '\n') || ver < 1 || ver > 10) {
      st = BAD("file format version '%.8s', which moontorch does not read (it reads 1 to 10)", v);
      goto done;
    }
  }
  snprintf(name + plen, sizeof name - plen, "/byteorder");
  if ((e = mt_zip_find(&z, name))) {
    char v[8] = {0};
    if (e->size > 6 || (st = mt_zip_read(&z, e, v)) != MT_OK) {
      if (st == MT_OK)
        st = BAD("a damaged byteorder record");
      goto done;
    }
    if (strcmp(v, "big") == 0)
      f->big_endian = 1;
    else if (strcmp(v, "little") != 0) {
      st = BAD("a byteorder record that is neither little nor big");
      goto done;
    }
  }
  snprintf(name + plen, sizeof name - plen, "/data.pkl");
  e = mt_zip_find(&z, name);
  if (!(pkl = malloc(e->size ? (size_t)e->size : 1))) {
    st = oom(f);
    goto done;
  }
  if ((st = mt_zip_read(&z, e, pkl)) != MT_OK)
    goto done;
  mt_in in;
  mt_in_memory(&in, pkl, e->size);
  in.op = OP;
  in.path = f->path;
  in.what = "data.pkl";
  if ((st = pk_load(&f->g, &in, persistent, f, &f->root)) != MT_OK)
    goto done;
  /* each storage's record */
  for (size_t i = 0; i < f->nkeys; i++) {
    pt_key *k = &f->keys[i];
    char shown[96];
    mt_fmt_printable(shown, sizeof shown, k->name, strlen(k->name));
    if (strlen(k->name) > 100) {
      st = BAD("a storage key too long ('%s')", shown);
      goto done;
    }
    snprintf(name + plen, sizeof name - plen, "/data/%s", k->name);
    if (!(e = mt_zip_find(&z, name))) {
      st = BAD("storage '%s' has no record data/%s in the archive", shown, shown);
      goto done;
    }
    if (e->size < k->need) {
      st = BAD("storage '%s' holds %llu bytes, fewer than its %llu", shown, (unsigned long long)e->size,
               (unsigned long long)k->need);
      goto done;
    }
    if ((st = new_bytes(f, k, e->size)) != MT_OK || (st = mt_zip_read(&z, e, k->bytes->_data)) != MT_OK)
      goto done;
    if (f->big_endian)
      swap_bytes((unsigned char *)k->bytes->_data, e->size, mt_itemsize(k->dtype));
  }
done:
  free(pkl);
  mt_zip_close(&z);
  return st;
}

/* ------------------------------------------------------------------ the legacy format */
static const unsigned char MAGIC[10] = {0x6c, 0xfc, 0x9c, 0x46, 0xf9, 0x20, 0x6a, 0xa8, 0x50, 0x19};

static mt_status read_legacy(mt_pt_file *f, int fd, uint64_t fsize) {
  mt_in in;
  MT_TRY(mt_in_file(&in, fd, 0, fsize));
  in.op = OP;
  in.path = f->path;
  mt_status st;
  uint32_t v;
  pk_node *x;
  in.what = "the magic number";
  if ((st = pk_load(&f->g, &in, NULL, NULL, &v)) != MT_OK)
    goto done;
  x = pk_at(&f->g, v);
  if (x->kind != MT_PT_INT || x->n != 10 || (x->flags & 1) || memcmp(x->p, MAGIC, 10) != 0) {
    st = BAD("not a PyTorch file (bad magic number)");
    goto done;
  }
  in.what = "the protocol version";
  if ((st = pk_load(&f->g, &in, NULL, NULL, &v)) != MT_OK)
    goto done;
  x = pk_at(&f->g, v);
  if (x->kind != MT_PT_INT || !(x->flags & 1) || x->i != 1001) {
    st = BAD("an unknown legacy protocol version (1001 expected)");
    goto done;
  }
  in.what = "the system info";
  if ((st = pk_load(&f->g, &in, NULL, NULL, &v)) != MT_OK)
    goto done;
  x = pk_at(&f->g, v);
  if (x->kind != MT_PT_DICT) {
    st = BAD("the system info is not a dict");
    goto done;
  }
  for (uint32_t i = 0; i + 1 < x->n; i += 2) {
    pk_node *k = pk_at(&f->g, ((uint32_t *)x->p)[i]), *val = pk_at(&f->g, ((uint32_t *)x->p)[i + 1]);
    if (is_str(k, "little_endian"))
      f->big_endian = val->kind == MT_PT_BOOL && val->i == 0;
  }
  in.what = "the pickle";
  f->legacy = 1;
  if ((st = pk_load(&f->g, &in, persistent, f, &f->root)) != MT_OK)
    goto done;
  in.what = "the storage keys";
  if ((st = pk_load(&f->g, &in, NULL, NULL, &v)) != MT_OK)
    goto done;
  x = pk_at(&f->g, v);
  if (x->kind != MT_PT_LIST) {
    st = BAD("the storage keys are not a list");
    goto done;
  }
  in.what = "the storages";
  for (uint32_t i = 0; i < x->n; i++) {
    pk_node *kn = pk_at(&f->g, ((uint32_t *)x->p)[i]);
    if (kn->kind != MT_PT_STRING && kn->kind != MT_PT_BYTES) {
      st = BAD("a storage key is not a string");
      goto done;
    }
    size_t idx;
    if ((st = key_slot(f, kn->p, kn->n, 0, &idx)) != MT_OK)
      goto done;
    char shown[96];
    mt_fmt_printable(shown, sizeof shown, kn->p, kn->n);
    if (idx == SIZE_MAX) {
      st = BAD("storage '%s' is listed but no tensor uses it", shown);
      goto done;
    }
    pt_key *k = &f->keys[idx];
    if (k->used) {
      st = BAD("storage '%s' is listed twice", shown);
      goto done;
    }
    k->used = 1;
    unsigned char nb[8];
    if ((st = mt_in_read(&in, nb, 8)) != MT_OK)
      goto done;
    uint64_t n = 0;
    for (int b = 0; b < 8; b++)
      n |= (uint64_t)nb[f->big_endian ? 7 - b : b] << (8 * b);
    size_t item = mt_itemsize(k->dtype);
    uint64_t bytes;
    if (__builtin_mul_overflow(n, (uint64_t)item, &bytes) || bytes > mt_in_left(&in)) {
      st = BAD("storage '%s' claims %llu elements, more than the file holds", shown, (unsigned long long)n);
      goto done;
    }
    if (bytes < k->need) {
      st = BAD("storage '%s' holds %llu bytes, fewer than its %llu", shown, (unsigned long long)bytes,
               (unsigned long long)k->need);
      goto done;
    }
    if ((st = new_bytes(f, k, bytes)) != MT_OK || (st = mt_in_read(&in, k->bytes->_data, (size_t)bytes)) != MT_OK)
      goto done;
    if (f->big_endian)
      swap_bytes((unsigned char *)k->bytes->_data, bytes, item);
  }
  if (mt_in_left(&in) != 0)
    st = BAD("%llu bytes after the last storage", (unsigned long long)mt_in_left(&in));
done:
  mt_in_free(&in);
  return st;
}

/* ------------------------------------------------------------------ the public face */
void mt_pt_close(mt_pt_file *f) {
  if (!f)
    return;
  pk_graph_free(&f->g);
  for (size_t i = 0; i < f->nkeys; i++) {
    free(f->keys[i].name);
    if (f->keys[i].bytes)
      mt_tensor_release(f->keys[i].bytes);
  }
  free(f->keys);
  free(f->slots);
  free(f->path);
  free(f);
}

mt_status mt_pt_open(const char *path, mt_pt_file **out) {
  if (!path || !out)
    return mt_error(MT_EINVAL, OP ": path is NULL");
  *out = NULL;
  mt_pt_file *f = calloc(1, sizeof *f);
  if (!f || !(f->path = strdup(path))) {
    free(f);
    return mt_error(MT_ENOMEM, OP ": out of memory");
  }
  int fd = open(path, O_RDONLY | O_CLOEXEC);
  if (fd < 0) {
    mt_status s = mt_error(MT_EIO, OP ": %s: cannot open the file (%s)", path, strerror(errno));
    mt_pt_close(f);
    return s;
  }
  struct stat sb;
  mt_status st = MT_OK;
  unsigned char head[512];
  memset(head, 0, sizeof head);
  if (fstat(fd, &sb) != 0)
    st = mt_error(MT_EIO, OP ": %s: cannot stat the file (%s)", path, strerror(errno));
  else if (!S_ISREG(sb.st_mode))
    st = BAD("not a regular file");
  uint64_t fsize = (uint64_t)sb.st_size;
  if (st == MT_OK)
    st = mt_pread_all(fd, head, fsize < sizeof head ? (size_t)fsize : sizeof head, 0, OP, path);
  if (st == MT_OK) {
    if (mt_zip_sniff(head, fsize < 4 ? (size_t)fsize : 4))
      st = read_zip(f, fd, fsize);
    else if (fsize >= 2 && head[0] == 0x80)
      st = read_legacy(f, fd, fsize);
    else if (fsize >= 262 && memcmp(head + 257, "ustar", 5) == 0)
      st = BAD("a tar archive: PyTorch's format before 0.4, which moontorch does not read (load and save it again "
               "with a newer PyTorch)");
    else
      st = BAD("not a PyTorch file (neither torch.save's zip archive nor its legacy pickle format)");
  }
  close(fd);
  if (st == MT_OK)
    st = make_tensors(f);
  if (st != MT_OK) {
    mt_pt_close(f);
    return st;
  }
  *out = f;
  return MT_OK;
}

uint32_t mt_pt_root(const mt_pt_file *f) { return f ? f->root : 0; }
uint32_t mt_pt_count(const mt_pt_file *f) { return f && f->g.n ? f->g.n - 1 : 0; }
const char *mt_pt_format(const mt_pt_file *f) { return f && f->legacy ? "legacy" : "zip"; }

mt_status mt_pt_get(mt_pt_file *f, uint32_t node, mt_pt_value *v) {
  if (!f || !v)
    return mt_error(MT_EINVAL, OP ": NULL argument");
  memset(v, 0, sizeof *v);
  if (node == 0 || node >= f->g.n)
    return mt_error(MT_ERANGE, OP ": %s: no value %u", f->path, node);
  pk_node *x = pk_at(&f->g, node);
  v->kind = x->kind;
  v->dtype = x->dtype;
  switch (x->kind) {
  case MT_PT_BOOL:
    v->integer = x->i;
    break;
  case MT_PT_INT:
    v->flags = x->flags & 1;
    v->integer = x->i;
    v->number = mt_number_out(x->f);
    break;
  case MT_PT_FLOAT:
    v->number = mt_number_out(x->f);
    break;
  case MT_PT_STRING:
  case MT_PT_BYTES:
    v->count = x->n;
    v->str = x->p ? x->p : "";
    break;
  case MT_PT_LIST:
  case MT_PT_TUPLE:
  case MT_PT_SET:
    v->count = x->n;
    v->items = x->p;
    break;
  case MT_PT_DICT:
  case MT_PT_ORDERED_DICT:
    v->count = x->n / 2;
    v->items = x->p;
    v->metadata = x->kind == MT_PT_ORDERED_DICT ? x->aux : 0;
    break;
  case MT_PT_TENSOR:
    v->flags = x->flags;
    v->tensor = mt_tensor_retain(x->t);
    break;
  case MT_PT_META_TENSOR:
    v->flags = x->flags;
    v->count = ((int64_t *)x->p)[1];
    v->sizes = (int64_t *)x->p + 2;
    break;
  case MT_PT_STORAGE:
    if (!x->t) {
      pt_key *k = &f->keys[x->aux];
      if (!k->bytes)
        return BAD("storage '%s' has no data", k->name);
      mt_tensor base;
      memset(&base, 0, sizeof base);
      base._storage = k->bytes->_storage;
      base._dtype = x->dtype;
      base._device_type = MT_CPU;
      int64_t n = x->j, one = 1;
      MT_TRY(mt_new_view(&base, &n, &one, 1, x->i, &x->t));
    }
    v->tensor = mt_tensor_retain(x->t);
    break;
  case MT_PT_DTYPE:
  case MT_PT_GLOBAL:
    v->str = pk_global_name(x->aux);
    break;
  default:
    break;
  }
  return MT_OK;
}
