/* formats.h -- readers of other frameworks' files (core/formats/): a reader of the stored entries of
 * zip archives (zip.c), PyTorch's restricted unpickler (pickle.c), PyTorch's torch.save files on top
 * of both (pytorch.c), Torch7's serialisation (t7.c). They read bytes and build values; nothing
 * in a file is ever run. Internal to the core: the public entry points are in moontorch.h. */
#ifndef MT_FORMATS_H
#define MT_FORMATS_H

#include "../mt_internal.h"

#include <stdio.h>

/* "<op>: <path>: <message>" as the last error, returning `code` */
mt_status mt_fmt_error(mt_status code, const char *op, const char *path, const char *fmt, ...)
    __attribute__((format(printf, 4, 5)));
/* up to `max` bytes of s as printable ASCII (other bytes as \xNN), NUL-terminated, for messages */
void mt_fmt_printable(char *out, size_t outsize, const char *s, size_t n);

/* ---------------------------------------------------------------- byte input */
/* Bytes read from a file descriptor through a buffer, or from memory; positions are absolute
 * (from the start of the file or the memory). Every read is checked against `end`. */
typedef struct mt_in {
  int fd;                     /* -1: memory */
  const unsigned char *mem;   /* memory: the bytes [0, end) */
  uint64_t pos, end;
  unsigned char *buf;         /* file: a window of the file */
  uint64_t bstart;            /* file position of buf[0] */
  size_t blen, bcap;
  const char *op, *path, *what; /* for messages: "<op>: <path>: <what> ..." */
} mt_in;
void mt_in_memory(mt_in *in, const void *data, uint64_t n);
mt_status mt_in_file(mt_in *in, int fd, uint64_t pos, uint64_t end);
void mt_in_free(mt_in *in);
static inline uint64_t mt_in_left(const mt_in *in) { return in->end - in->pos; }
/* n bytes into dst; a short input is MT_EFORMAT "<what> is truncated" */
mt_status mt_in_read(mt_in *in, void *dst, size_t n);
/* pread the whole of [off, off + n) of fd into dst (MT_EIO / truncated as MT_EFORMAT) */
mt_status mt_pread_all(int fd, void *dst, size_t n, uint64_t off, const char *op, const char *path);

/* ---------------------------------------------------------------- zip archives (zip.c) */
/* The central directory of a zip archive (zip64 too), entries sorted by name. Only what a reader
 * of stored entries needs: torch.save writes every entry stored (method 0), uncompressed. */
typedef struct mt_zip_entry {
  char *name; /* NUL-terminated; names with a NUL inside are refused */
  uint64_t size;       /* bytes (compressed = uncompressed: stored) */
  uint64_t local;      /* offset of the local header */
  uint32_t crc;
  uint16_t method, flags;
} mt_zip_entry;
typedef struct mt_zip {
  int fd;
  uint64_t file_size, cd_offset; /* every entry's data lies before the central directory */
  mt_zip_entry *e;
  size_t n;
  const char *op, *path;
} mt_zip;
/* 1 when the file starts with a zip local header or is an empty archive's end record */
int mt_zip_sniff(const unsigned char *head, size_t n);
mt_status mt_zip_open(mt_zip *z, int fd, uint64_t file_size, const char *op, const char *path);
void mt_zip_close(mt_zip *z); /* frees the directory (not the fd) */
const mt_zip_entry *mt_zip_find(const mt_zip *z, const char *name);
/* The entry's bytes into dst (its size), local header checked, CRC-32 checked where zlib is built in */
mt_status mt_zip_read(const mt_zip *z, const mt_zip_entry *e, void *dst);

/* ---------------------------------------------------------------- the restricted unpickler (pickle.c) */
/* Node kinds: the public MT_PT_* (moontorch.h), plus the unpickler's own. */
enum { PK_KIND_PID = 100 /* a persistent id being resolved (never left in a graph) */ };
typedef struct pk_node {
  uint8_t kind;   /* MT_PT_* */
  uint8_t flags;  /* int: 1 exact (i holds it); tensor: MT_PT_PARAMETER, MT_PT_REQUIRES_GRAD */
  int16_t dtype;  /* dtype, storage, tensor, meta tensor: the mt_dtype (-1: one moontorch lacks) */
  uint32_t n;     /* items (list, tuple, set), key/value pairs x 2 (dict), bytes (string) */
  uint32_t cap;
  uint32_t aux;   /* ordered dict: its _metadata node; tensor: its storage node; storage: key slot;
                     global: the global's number */
  int64_t i, j;   /* int: the value; storage: element offset, elements; */
  double f;       /* int, float: the value */
  void *p;        /* items (uint32_t *), string bytes (NUL-terminated), tensor geometry
                     (int64_t: offset, ndim, sizes, strides), a big int's bytes */
  mt_tensor *t;   /* tensor, storage: the tensor once built */
} pk_node;

typedef struct pk_graph {
  pk_node *nodes; /* node 0 is unused: id 0 means "none" */
  uint32_t n, cap;
} pk_graph;
void pk_graph_free(pk_graph *g);
/* a new node of `kind` (dtype -1, the rest zero) at *id: 0, or 1 when the graph holds 2^30 nodes
 * already, 2 when out of memory (each reader says so in its own words) */
int pk_graph_add(pk_graph *g, int kind, uint32_t *id);
static inline pk_node *pk_at(const pk_graph *g, uint32_t id) { return &g->nodes[id]; }

/* Called for BINPERSID with the persistent id (a tuple node): returns the node that stands for it. */
typedef mt_status (*pk_persistent_fn)(void *ctx, pk_graph *g, uint32_t pid, uint32_t *out);
/* Run one pickle from in (to its STOP), adding nodes to g; *root is the unpickled value. */
mt_status pk_load(pk_graph *g, mt_in *in, pk_persistent_fn persistent, void *ctx, uint32_t *root);
/* the name of a global (for messages), and the dtype a storage class's global names (-1 none) */
const char *pk_global_name(uint32_t global);
/* 1 when x is the global of a storage class (torch.FloatStorage, ...); x->dtype is its dtype (-1:
 * one moontorch lacks) */
int pk_is_storage_type(const pk_node *x);
/* the bytes of a big int node (n bytes, two's complement, little-endian) */
static inline const unsigned char *pk_int_bytes(const pk_node *x) { return x->p; }

#endif
