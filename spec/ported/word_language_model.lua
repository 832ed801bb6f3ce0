-- pytorch/examples' word_language_model (model.py's RNNModel with an LSTM, main.py's batchify,
-- get_batch, repackage_hidden, train and evaluate with the hand-written SGD step), ported to
-- moontorch (issue 27's port test), on a small synthetic corpus made here (a repeating sentence
-- pattern of 12 token ids, counted from 1); run by spec/ported_examples_spec.lua. PyTorch habits
-- it keeps: getattr(nn, rnn_type)(...), rnn:flatten_parameters(), `for p in model:parameters() do
-- p.data:add_(p.grad, {alpha = -lr}) end`, next(model.parameters()) as model:parameters()[1],
-- source[i:i+seq_len] as source[{{i, i + seq_len - 1}}], len(data) as #data, narrow(0, ...) as
-- narrow(1, ...), log_softmax(dim=1) as log_softmax{dim = 2}.
local torch = require 'moontorch'
local nn = torch.nn
local F = nn.functional

local args = { emsize = 16, nhid = 32, nlayers = 2, lr = 20, clip = 0.25, epochs = 8, batch_size = 4, bptt = 14,
  dropout = 0.2, seed = 1111 }
torch.manual_seed(args.seed)

local RNNModel, Parent = torch.class('ported.RNNModel', nn.Module)
function RNNModel:__init(rnn_type, ntoken, ninp, nhid, nlayers, dropout)
  Parent.__init(self)
  self.ntoken = ntoken
  self.drop = nn.Dropout(dropout or 0.5)
  self.encoder = nn.Embedding(ntoken, ninp)
  self.rnn = nn[rnn_type](ninp, nhid, nlayers, { dropout = dropout })
  self.decoder = nn.Linear(nhid, ntoken)
  self:init_weights()
  self.rnn_type, self.nhid, self.nlayers = rnn_type, nhid, nlayers
end
function RNNModel:init_weights()
  local initrange = 0.1
  nn.init.uniform_(self.encoder.weight, -initrange, initrange)
  nn.init.zeros_(self.decoder.bias)
  nn.init.uniform_(self.decoder.weight, -initrange, initrange)
end
function RNNModel:forward(input, hidden)
  local emb = self.drop(self.encoder(input))
  self.rnn:flatten_parameters()
  local output
  output, hidden = self.rnn(emb, hidden)
  output = self.drop(output)
  local decoded = self.decoder(output)
  decoded = decoded:view(-1, self.ntoken)
  return F.log_softmax(decoded, { dim = 2 }), hidden
end
function RNNModel:init_hidden(bsz)
  local weight = self:parameters()[1] -- next(self.parameters())
  return { weight:new_zeros(self.nlayers, bsz, self.nhid), weight:new_zeros(self.nlayers, bsz, self.nhid) }
end

-- the corpus: ids 1..12, a pattern the model can learn
local pattern = { 1, 2, 3, 4, 5, 2, 6, 7, 8, 9, 10, 11, 12, 3 }
local function corpus(n)
  local ids = {}
  for i = 1, n do ids[i] = pattern[(i - 1) % #pattern + 1] end
  return torch.tensor(ids, { dtype = torch.int64 })
end
local ntokens = 12

local function batchify(data_, bsz)
  local nbatch = math.floor(data_:size(1) / bsz)
  data_ = data_:narrow(1, 1, nbatch * bsz)
  return data_:view(bsz, -1):t():contiguous()
end
local train_data = batchify(corpus(1120), args.batch_size)
local val_data = batchify(corpus(224), 2)

local model = RNNModel('LSTM', ntokens, args.emsize, args.nhid, args.nlayers, args.dropout)
local criterion = nn.NLLLoss()

local function repackage_hidden(h)
  if torch.is_tensor(h) then return h:detach() end
  local r = {}
  for i, v in ipairs(h) do r[i] = repackage_hidden(v) end
  return r
end

local function get_batch(source, i)
  local seq_len = math.min(args.bptt, #source - i) -- min(bptt, len(source) - 1 - i), i counted from 1
  local data_ = source[{ { i, i + seq_len - 1 } }]
  local target = source[{ { i + 1, i + seq_len } }]:view(-1)
  return data_, target
end

local function evaluate(data_source)
  model:eval()
  local total_loss = 0
  local hidden = model:init_hidden(2)
  torch.no_grad(function()
    for i = 1, data_source:size(1) - 1, args.bptt do
      local data_, targets = get_batch(data_source, i)
      local output
      output, hidden = model(data_, hidden)
      hidden = repackage_hidden(hidden)
      total_loss = total_loss + #data_ * criterion(output, targets):item()
    end
  end)
  return total_loss / (#data_source - 1)
end

local lr = args.lr
local function train(epoch)
  model:train()
  local total_loss, n = 0, 0
  local hidden = model:init_hidden(args.batch_size)
  for i = 1, train_data:size(1) - 1, args.bptt do
    local data_, targets = get_batch(train_data, i)
    model:zero_grad()
    hidden = repackage_hidden(hidden)
    local output
    output, hidden = model(data_, hidden)
    local loss = criterion(output, targets)
    loss:backward()
    nn.utils.clip_grad_norm_(model:parameters(), args.clip)
    for p in model:parameters() do
      p.data:add_(p.grad, { alpha = -lr })
    end
    total_loss, n = total_loss + loss:item(), n + 1
  end
  return total_loss / n
end

local first_val = evaluate(val_data)
local val_loss
for epoch = 1, args.epochs do
  local train_loss = train(epoch)
  val_loss = evaluate(val_data)
  print(('| end of epoch %3d | train loss %5.2f | valid loss %5.2f | valid ppl %8.2f'):format(epoch, train_loss,
    val_loss, math.exp(val_loss)))
end
print(('RESULT first_val=%.4f val=%.4f ppl=%.3f'):format(first_val, val_loss, math.exp(val_loss)))
