/* handles.c -- storage for the Lua layer's handle registry (see lua/tensor.lua). */
#include "mt_internal.h"

#include <stdlib.h>

static mt_tensor **handles;
static mt_tensor **dead; /* mt_handles_reclaim's list of the references it releases */
static int64_t handles_cap;

mt_tensor **mt_handles_resize(int64_t cap) {
  if (cap <= handles_cap) return handles;
  mt_tensor **d = realloc(dead, (size_t)cap * sizeof *d);
  if (!d) return NULL;
  dead = d;
  mt_tensor **h = realloc(handles, (size_t)cap * sizeof *h);
  if (!h) return NULL;
  memset(h + handles_cap, 0, (size_t)(cap - handles_cap) * sizeof *h);
  handles = h;
  handles_cap = cap;
  return h;
}

int64_t mt_handles_reclaim(uint8_t *live, int32_t *freed) {
  int64_t n = 0;
  for (int64_t i = 0; i < handles_cap; i++) {
    mt_tensor *t = handles[i];
    if (t && !live[i]) {
      handles[i] = NULL;
      dead[n] = t;
      freed[n++] = (int32_t)i;
    }
    live[i] = 0;
  }
  mt_tensor_release_many(dead, n);
  return n;
}

void mt_handles_release_all(void) {
  for (int64_t i = 0; i < handles_cap; i++)
    if (handles[i]) mt_tensor_release(handles[i]);
  free(handles);
  free(dead);
  handles = NULL;
  dead = NULL;
  handles_cap = 0;
}
