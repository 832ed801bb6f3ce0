/* mt_internal.h -- the bottom layer of the core in one include: errors (error.h), dtypes
 * (dtype.h), storages and tensor heads (alloc.h), the thread pool (thread.h) and the CPU's
 * features (cpu.h). It knows nothing
 * of kernels, backends or autograd. Not installed. */
#ifndef MT_INTERNAL_H
#define MT_INTERNAL_H

#include "error.h"
#include "dtype.h"
#include "alloc.h"
#include "thread.h"
#include "cpu.h"

#endif
