/* ctc.h -- the internal front door of the CTC loss's backward (core/ops/ctc.c), for the autograd
 * layer. Internal to the core. */
#ifndef MT_OPS_CTC_H
#define MT_OPS_CTC_H

#include "dispatch.h"

/* d(sum of g * loss) / d log_probs, (T, N, C), from the forward's operands. Not recorded. */
mt_status mt_ctc_loss_backward(mt_tensor *g, mt_tensor *log_probs, mt_tensor *targets, mt_tensor *input_lengths,
                               mt_tensor *target_lengths, int64_t blank, int64_t index_base, mt_tensor **result);

#endif
