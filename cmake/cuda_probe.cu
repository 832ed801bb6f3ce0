// cuda_probe.cu -- CMakeLists.txt's check that nvcc builds a kernel for moontorch's architectures
// (sm_80, sm_90 + PTX) with this host compiler, warnings as errors, before the CUDA backend counts on it.
__global__ void mt_cuda_probe(float *x, int n) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n) x[i] = 2.0f * x[i] + 1.0f;
}
