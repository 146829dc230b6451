// Array addition on the GPU: every thread adds one pair of elements.
//
// vector_add_single_block is the smallest form: one block, and a thread's position in it
// (threadIdx.x) is the element it owns, so it handles at most 1024 elements (the block limit).
// vector_add lifts that limit: many blocks of blockDim.x threads each, so a thread's element
// is blockIdx.x * blockDim.x + threadIdx.x, and the threads past the end do nothing.
// The index is computed in 64 bits: blockIdx.x * blockDim.x is a 32-bit unsigned product,
// which would wrap for grids of more than 2^32 threads.

extern "C" __global__ void vector_add_single_block(const float* a, const float* b, float* c)
{
    int i = threadIdx.x;
    c[i] = a[i] + b[i];
}

extern "C" __global__ void vector_add(const float* a, const float* b, float* c, int n)
{
    long long i = (long long)blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) {
        c[i] = a[i] + b[i];
    }
}
