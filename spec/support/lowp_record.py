# Records PyTorch 1.13's bfloat16/float16 results for spec/lowp_spec.lua (issue 25).
# Run: /usr/bin/python3 spec/support/lowp_record.py   (prints Lua tables to paste)
import math
import torch
import torch.nn.functional as F

def grid(r, c, k):
    # the spec's inputs: sin of a lattice, exactly as spec/lowp_spec.lua's grid() makes them (float64 -> dtype)
    return torch.tensor([[math.sin(i * 0.7 + j * 1.3 + k) * (1 + (i + j) % 3) for j in range(c)] for i in range(r)],
                        dtype=torch.float64)

def lua(t):
    t = t.double()
    if t.dim() == 0:
        return repr(t.item())
    return '{' + ', '.join(lua(x) for x in t) + '}'

out = {}
for dt, name in ((torch.bfloat16, 'bf16'), (torch.float16, 'f16')):
    a, b, c = grid(5, 7, 0).to(dt), grid(7, 3, 1).to(dt), grid(5, 3, 2).to(dt)
    if dt == torch.bfloat16:
        out[name + '_mm'] = a @ b
        out[name + '_addmm'] = torch.addmm(c, a, b, beta=0.5, alpha=2)
        # PyTorch 1.13's small bfloat16 CPU product rounds its partial sums to bfloat16; the float32
        # product of the same values rounded once is what moontorch computes (and PyTorch with oneDNN)
        out[name + '_mm_f32'] = (a.float() @ b.float()).to(dt)
        out[name + '_addmm_f32'] = (2 * (a.float() @ b.float()) + 0.5 * c.float()).to(dt)
    else:
        # PyTorch 1.13 has no float16 product on the CPU ("addmm_impl_cpu_" not implemented for 'Half'):
        # moontorch's is the float32 product of the same values, rounded once
        out[name + '_mm'] = (a.float() @ b.float()).to(dt)
    x, y = grid(4, 6, 3).to(dt), grid(4, 6, 4).to(dt)
    def put(k, f):
        try:
            out[name + k] = f()
        except RuntimeError as e:  # an op 1.13 lacks for this dtype on the CPU
            print('-- %s%s: %s' % (name, k, str(e).splitlines()[0]))
    out[name + '_add'] = x + y
    put('_mul', lambda: x * y)
    put('_div', lambda: x / (y.abs() + 1))
    put('_exp', lambda: x.exp())
    put('_tanh', lambda: x.tanh())
    put('_sigmoid', lambda: x.sigmoid())
    put('_sum', lambda: x.sum(1))
    put('_mean', lambda: x.mean())
    put('_softmax', lambda: F.softmax(x, 1))
    put('_log_softmax', lambda: F.log_softmax(x, 1))
    put('_relu', lambda: F.relu(x))
    if dt == torch.bfloat16:
        out[name + '_layer_norm'] = F.layer_norm(x, (6,))
        # gradients of a bfloat16 product: (a @ b).sum() backward
        aa, bb = a.clone().requires_grad_(), b.clone().requires_grad_()
        (aa @ bb).sum().backward()
        out[name + '_mm_grad_a'] = aa.grad
        out[name + '_mm_grad_b'] = bb.grad
        out[name + '_mm_grad_a_f32'] = (torch.ones(5, 3) @ b.float().t()).to(dt)
        out[name + '_mm_grad_b_f32'] = (a.float().t() @ torch.ones(5, 3)).to(dt)
for k in sorted(out):
    print('  %s = %s,' % (k, lua(out[k])))
