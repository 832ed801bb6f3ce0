/* rnn.h -- what the recurrent ops' autograd (core/grad/rnn.c) needs of their front doors
 * (core/ops/rnn.c) beyond the public ones: the forwards that also hand out their workspace (the
 * activated gates), and the fused backwards. Internal to the core. */
#ifndef MT_OPS_RNN_H
#define MT_OPS_RNN_H

#include "dispatch.h"

/* mt_lstm_cell_pointwise / mt_gru_cell_pointwise, also giving ws ([batch, 4 * hidden]: the gates
 * as the kernels keep them for the backward) when `ws` is not NULL */
mt_status mt_lstm_cell_forward(mt_tensor *igates, mt_tensor *hgates, mt_tensor *cx, mt_tensor *b_ih, mt_tensor *b_hh,
                               mt_tensor **hy, mt_tensor **cy, mt_tensor **ws);
mt_status mt_gru_cell_forward(mt_tensor *igates, mt_tensor *hgates, mt_tensor *hx, mt_tensor *b_ih, mt_tensor *b_hh,
                              mt_tensor **hy, mt_tensor **ws);
/* The fused backwards (not recorded): from the outputs' gradients (dhy or dcy may be NULL) the
 * gradient of the gates before their activations, [batch, 4 * hidden], and of cx */
mt_status mt_lstm_cell_backward(mt_tensor *dhy, mt_tensor *dcy, mt_tensor *cx, mt_tensor *cy, mt_tensor *ws,
                                mt_tensor **dgates, mt_tensor **dcx);
/* ... and of the GRU: the gradients of igates, of hgates ([batch, 3 * hidden]) and of hx */
mt_status mt_gru_cell_backward(mt_tensor *dhy, mt_tensor *hx, mt_tensor *ws, mt_tensor **dig, mt_tensor **dhg,
                               mt_tensor **dhx);

/* mt_lstm_layer, also giving ws ([T, B, 4 * hidden]: every step's gates as the cell kernel keeps
 * them) when `ws` is not NULL */
mt_status mt_lstm_layer_forward(mt_tensor *igates, mt_tensor *h0, mt_tensor *c0, mt_tensor *w_hh, int reverse,
                                mt_tensor **hs, mt_tensor **cs, mt_tensor **ws);

#endif
