// Index gathers for convolution and pooling (prelude/src/tensor/gather.rs): im2col is
// `gather_f32` with a precomputed index per output element (-1 reads as zero: padding), and
// its backward (col2im) is `scatter_add_f32`, which adds each gradient to the element it was
// read from. Atomic adds, because overlapping windows read one input element many times.

extern "C" __global__ void gather_f32(const float* src, const int* idx, float* out, long long n) {
    for (long long i = blockIdx.x * (long long)blockDim.x + threadIdx.x; i < n;
         i += (long long)gridDim.x * blockDim.x) {
        int j = idx[i];
        out[i] = j < 0 ? 0.0f : src[j];
    }
}

// `out` must be zeroed before the launch.
extern "C" __global__ void scatter_add_f32(const float* g, const int* idx, float* out, long long n) {
    for (long long i = blockIdx.x * (long long)blockDim.x + threadIdx.x; i < n;
         i += (long long)gridDim.x * blockDim.x) {
        int j = idx[i];
        if (j >= 0) atomicAdd(&out[j], g[i]);
    }
}
