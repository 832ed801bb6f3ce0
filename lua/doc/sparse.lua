-- The docs of sparse CSR matrices (issue 24; moontorch.doc: lua/doc/init.lua says how an entry is written).
local doc = ...

doc.section 'Torch.sparse'
doc { 'torch.sparse_csr_tensor(crow_indices, col_indices, values, size, {dtype=, requires_grad=}) -> SparseCsrTensor',
  does = 'A 2-D sparse matrix in CSR form. Positions count from 1: col_indices are 1-based columns, crow_indices 1-based positions in values (row i\'s entries are values[crow[i] .. crow[i+1] - 1]; crow[1] = 1).',
  ex = 'print(torch.sparse_csr_tensor({1, 2, 3}, {2, 1}, {5, 6}, {2, 2}):to_dense())  --> tensor([[0., 5.], [6., 0.]])' }
doc { 'torch.sparse.mm(sparse, dense) -> Tensor', 'torch.sparse.linear(input, sparse, bias) -> Tensor',
  pt = 'torch.sparse.mm, torch.nn.functional.linear',
  does = 'sparse @ dense, and input @ sparse^T + bias (what F.linear runs for a CSR weight): the op csr_mm, skipping the zeros; gradients reach the values and the dense operand.',
  ex = 'local w = torch.tensor({{0, 2}, {1, 0}}):to_sparse_csr()\nprint(torch.sparse.mm(w, torch.eye(2)), F.linear(torch.ones(1, 2), w))  --> tensor([[0., 2.], [1., 0.]]) tensor([[2., 1.]])' }
doc { 'torch.sparse.is_csr(x) -> boolean', pt = false,
  does = 'Whether x is a sparse CSR matrix.',
  ex = 'print(torch.sparse.is_csr(torch.eye(2):to_sparse_csr()), torch.sparse.is_csr(torch.eye(2)))  --> true false' }
doc { 'torch.sparse.SparseCsrTensor:crow_indices() -> Tensor', 'torch.sparse.SparseCsrTensor:col_indices() -> Tensor',
  'torch.sparse.SparseCsrTensor:values() -> Tensor', 'torch.sparse.SparseCsrTensor:to_dense() -> Tensor',
  'torch.sparse.SparseCsrTensor:size(dim) -> Size', 'torch.sparse.SparseCsrTensor:dim() -> number', 'torch.sparse.SparseCsrTensor:numel() -> number',
  'torch.sparse.SparseCsrTensor:mm(dense) -> Tensor', 'torch.sparse.SparseCsrTensor:matmul(dense) -> Tensor',
  'torch.sparse.SparseCsrTensor:to(...) -> SparseCsrTensor', 'torch.sparse.SparseCsrTensor:detach() -> SparseCsrTensor',
  'torch.sparse.SparseCsrTensor:requires_grad_(b) -> self', 'torch.sparse.SparseCsrTensor:t() -> Tensor',
  'torch.sparse.SparseCsrTensor:is_sparse_csr() -> boolean',
  pt = 'Tensor.crow_indices, Tensor.col_indices, Tensor.values, Tensor.to_dense, Tensor.mm',
  unchecked_args = true,
  does = 'A CSR matrix (printed as PyTorch prints one; .shape, .dtype, .layout = \'torch.sparse_csr\', ._nnz()); t() gives the dense transpose.',
  ex = 'local c = torch.eye(2):to_sparse_csr()\nprint(c:crow_indices(), c:col_indices(), c.layout)  --> tensor([1, 2, 3]) tensor([1, 2]) torch.sparse_csr' }
doc { 'torch.sparse.SparseCsrTensor(...)', pt = false,
  does = 'The class of sparse CSR matrices (made by torch.sparse_csr_tensor and Tensor:to_sparse_csr).',
  ex = 'print(torch.isinstance(torch.eye(2):to_sparse_csr(), torch.sparse.SparseCsrTensor))  --> true' }
doc { 'torch.sparse_csr', pt = 'torch.sparse_csr',
  does = 'The layout name of CSR matrices (their .layout).',
  ex = 'print(torch.sparse_csr)  --> torch.sparse_csr' }
