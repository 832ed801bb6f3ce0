-- luarocks --lua-version=5.1 make rockspec/moontorch-scm-1.rockspec   (from the repository root)
rockspec_format = "3.0"
package = "moontorch"
version = "scm-1"
source = {
  url = "git+https://github.com/moontorch/moontorch.git",
}
description = {
  summary = "PyTorch's semantics for LuaJIT, over a C core (Torch7 style)",
  detailed = [[
moontorch is a Torch7-style neural-network runtime for LuaJIT with PyTorch's semantics:
a C core (libmoontorch, strided tensors, OpenBLAS) bound through the LuaJIT FFI, and the
Lua module `moontorch` (tensors, autograd, nn and optim).
]],
  homepage = "https://github.com/moontorch/moontorch",
  license = "BSD-3-Clause",
}
dependencies = {
  "lua >= 5.1", -- LuaJIT 2.1 (the FFI is required)
}
supported_platforms = { "linux" }
-- CMake builds the CUDA backend (core/gpu/) where it finds nvcc, as a build from the checkout does
-- (MOONTORCH_CUDA=AUTO); `MOONTORCH_CUDA=OFF luarocks make ...` (or ON) in the environment decides.
build = {
  type = "cmake",
  variables = {
    CMAKE_INSTALL_PREFIX = "$(PREFIX)",
    CMAKE_BUILD_TYPE = "Release",
    LUADIR = "$(LUADIR)",
    LIBDIR = "$(LIBDIR)",
    BINDIR = "$(BINDIR)",
    MT_BUILD_TESTS = "OFF",
    MT_BUILD_EXAMPLES = "OFF",
  },
}
