// Mandelbrot iteration counts, one pixel per thread with grid-stride loops in x and y,
// launched with 16x16 blocks (gpulab::Mandelbrot::gpu). The output is row-major float:
// counts never exceed max_iter, and every integer up to 2^24 is exact in f32.
//
// The arithmetic must round exactly like the CPU code (gpulab::mandelbrot::escape_count)
// so the images agree bit for bit. nvcc/NVRTC would otherwise fuse a*b+c into one FMA
// (one rounding instead of two), so every step uses the explicitly rounded intrinsics,
// which the compiler never contracts.

extern "C" __global__ void mandelbrot(double x_min, double x_max, double y_min, double y_max,
                                      float* out, int width, int height, unsigned int max_iter)
{
    const double px = __ddiv_rn(__dsub_rn(x_max, x_min), (double)width);
    const double py = __ddiv_rn(__dsub_rn(y_max, y_min), (double)height);
    // 64-bit positions and strides: a 32-bit y + step_y could wrap past INT_MAX.
    const long long step_x = (long long)gridDim.x * blockDim.x;
    const long long step_y = (long long)gridDim.y * blockDim.y;

    for (long long y = (long long)blockIdx.y * blockDim.y + threadIdx.y; y < height; y += step_y) {
        const double ci = __dadd_rn(y_min, __dmul_rn((double)y, py));
        for (long long x = (long long)blockIdx.x * blockDim.x + threadIdx.x; x < width; x += step_x) {
            const double cr = __dadd_rn(x_min, __dmul_rn((double)x, px));
            double zr = 0.0, zi = 0.0;
            unsigned int count = max_iter;
            for (unsigned int i = 0; i < max_iter; ++i) {
                const double re = __dadd_rn(__dsub_rn(__dmul_rn(zr, zr), __dmul_rn(zi, zi)), cr);
                const double im = __dadd_rn(__dadd_rn(__dmul_rn(zr, zi), __dmul_rn(zi, zr)), ci);
                zr = re;
                zi = im;
                if (__dadd_rn(__dmul_rn(zr, zr), __dmul_rn(zi, zi)) >= 4.0) {
                    count = i;
                    break;
                }
            }
            out[(size_t)y * (size_t)width + (size_t)x] = (float)count;
        }
    }
}
