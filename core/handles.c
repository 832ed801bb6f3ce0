/* handles.c -- storage for the Lua layer's handle registry (see lua/tensor.lua). */
#include "mt_internal.h"

#include <stdlib.h>

static mt_tensor **handles;
static int64_t handles_cap;

mt_tensor **mt_handles_resize(int64_t cap) {
  if (cap <= handles_cap) return handles;
  mt_tensor **h = realloc(handles, (size_t)cap * sizeof *h);
  if (!h) return NULL;
  memset(h + handles_cap, 0, (size_t)(cap - handles_cap) * sizeof *h);
  handles = h;
  handles_cap = cap;
  return h;
}

void mt_handles_release_all(void) {
  for (int64_t i = 0; i < handles_cap; i++)
    if (handles[i]) mt_tensor_release(handles[i]);
  free(handles);
  handles = NULL;
  handles_cap = 0;
}
