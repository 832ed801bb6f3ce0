-- Issue 26's measure: LeNet-5 inference at batch 1 (1x28x28, eval) run by the C runner
-- (torch.export, then build/bin/moontorch-run --repeat: mt_program_run in a process without Lua),
-- and the same module called from Lua under no_grad, for comparison. Microseconds per inference.
-- Threads: $BENCH_THREADS (MT_NUM_THREADS for the runner). And ONNX Runtime's time on the same LeNet
-- where bench/.venv has onnxruntime (below).
local B = dofile((arg[0]:gsub('[^/]*$', '')) .. 'common.lua')
local torch = require 'moontorch'
local nn = require 'moontorch.nn'
local threads = tonumber(os.getenv('BENCH_THREADS') or 2)
torch.set_num_threads(threads)
torch.manual_seed(0)
local net = nn.Sequential(
  nn.Conv2d(1, 6, 5), nn.ReLU(), nn.MaxPool2d(2),
  nn.Conv2d(6, 16, 5), nn.ReLU(), nn.MaxPool2d(2),
  nn.Flatten(), nn.Linear(256, 120), nn.ReLU(), nn.Linear(120, 84), nn.ReLU(), nn.Linear(84, 10)):eval()
local x = torch.randn(1, 1, 28, 28)
local reps = tonumber(arg[1]) or 2000
local dir = os.tmpname()
torch.export(net, { x }, dir .. '.mtp')
torch.save_safetensors({ input = x }, dir .. '.safetensors')
local build = os.getenv('MOONTORCH_BUILD_DIR') or 'build'
local best = math.huge
for _ = 1, 5 do
  local p = io.popen(('MT_NUM_THREADS=%d %s/bin/moontorch-run %s.mtp %s.safetensors --quiet --repeat %d 2>&1')
    :format(threads, build, dir, dir, reps))
  local out = p:read('*a')
  p:close()
  local us = tonumber(out:match('runs: ([%d.]+) us a run'))
  if not us then error('moontorch-run failed: ' .. out) end
  best = math.min(best, us)
end
B.report('runner_us', best)
-- ONNX Runtime on the same LeNet (where bench/.venv has onnxruntime: bench/venv.sh): our
-- torch.onnx.export of it (ORT's output checked against the module's: maxdiff) and PyTorch 1.13's own
-- export of the same layers (bench/onnx_runtime.py export, Debian's /usr/bin/python3), same threads
local venv = os.getenv('BENCH_PYTHON_NOW') or 'bench/.venv/bin/python'
local rc = os.execute(venv .. " -c 'import onnxruntime' >/dev/null 2>&1")
if (rc == true or rc == 0) and torch.onnx then
  local ffi = require 'ffi'
  local function raw(t, path)
    local f = assert(io.open(path, 'wb'))
    t = t:contiguous()
    f:write(ffi.string(t:data_ptr(), t:numel() * 4))
    f:close()
  end
  torch.onnx.export(net, { x }, dir .. '.onnx')
  raw(x, dir .. '.in')
  raw(torch.no_grad(function() return net(x) end), dir .. '.out')
  local function ort(file, check)
    local p = io.popen(('OMP_NUM_THREADS=%d %s bench/onnx_runtime.py run %s %d %d %s 2>&1'):format(threads, venv, file,
      threads, reps, check and (dir .. '.in ' .. dir .. '.out') or ''))
    local out = p:read('*a')
    p:close()
    local us = tonumber(out:match('us ([%d.e+-]+)'))
    if not us then error('onnx_runtime.py failed: ' .. out) end
    return us, tonumber(out:match('maxdiff ([%d.e+-]+)'))
  end
  local us, diff = ort(dir .. '.onnx', true)
  B.report('ort_ours_us', us)
  if diff then B.report('ort_ours_maxdiff', diff) end
  local e = os.execute('/usr/bin/python3 bench/onnx_runtime.py export ' .. dir .. '.pt.onnx >/dev/null 2>&1')
  if e == true or e == 0 then B.report('ort_pytorch_us', (ort(dir .. '.pt.onnx'))) end
  for _, s in ipairs({ '.onnx', '.pt.onnx', '.in', '.out' }) do os.remove(dir .. s) end
end
os.remove(dir); os.remove(dir .. '.mtp'); os.remove(dir .. '.safetensors')
local t = B.best(function(r) torch.no_grad(function() for _ = 1, r do net(x) end end) end, reps, 5)
B.report('lua_us', t * 1e6)
