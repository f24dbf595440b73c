// Strided 2D views: a window of a dense row-major matrix, addressed with the matrix's row
// stride, and a cudaMallocPitch image addressed with its pitch.
//
// The matrix is R x LD floats in one cudaMalloc of exactly R * LD elements. The program copies
// out, transposed, the window made of the last W columns of the bottom WR rows: its first
// element is m + (R - WR) * LD + (LD - W), and the kernel reads src[r * LD + c].
//
// bug_last_row: the window's first column is computed as LD - W + 1 (a 1-based column number
// used as an offset). Every row but the last then reads, for its last column, the first element
// of the next row (wrong but inside the allocation); the last row's last element is
// m[R * LD], one past the end. One thread reads it: window (r, c) = (WR - 1, W - 1).
//
// The pitched image is correct in every case: pitch padding is part of its allocation.
#include "common.cuh"

// dst (cols x rows) = transpose of the rows x cols window at src, whose rows are ld apart.
__global__ void transpose_window(const float* src, int ld, int rows, int cols, float* dst)
{
    int c = blockIdx.x * blockDim.x + threadIdx.x;
    int r = blockIdx.y * blockDim.y + threadIdx.y;
    if (r < rows && c < cols) {
        dst[c * rows + r] = src[r * ld + c]; // RUN-BUG(bug_last_row)
    }
}

// Scales a width x height image in place; rows are `pitch` bytes apart.
__global__ void scale_rows(char* image, size_t pitch, int width, int height, float s)
{
    int x = blockIdx.x * blockDim.x + threadIdx.x;
    int y = blockIdx.y * blockDim.y + threadIdx.y;
    if (x < width && y < height) {
        float* row = reinterpret_cast<float*>(image + y * pitch);
        row[x] = row[x] * s;
    }
}

int main(int argc, char** argv)
{
    const char* which = pick_case(argc, argv, {"correct", "bug_last_row"});

    // The window.
    const int R = 48, LD = 40, WR = 32, W = 8;
    std::vector<float> m(R * LD);
    for (int i = 0; i < R * LD; ++i) m[i] = static_cast<float>(i % 1009);
    float* dm = to_device(m);
    const int first_col = is_case(which, "bug_last_row") ? LD - W + 1 : LD - W;
    const float* window = dm + (R - WR) * LD + first_col;
    float* dt = nullptr;
    CHECK(cudaMalloc(&dt, W * WR * sizeof(float)));
    poison(dt, W * WR * sizeof(float));
    dim3 block(16, 16);
    dim3 grid((W + block.x - 1) / block.x, (WR + block.y - 1) / block.y);
    transpose_window<<<grid, block>>>(window, LD, WR, W, dt);
    CHECK_LAUNCH();
    std::vector<float> t = to_host(dt, W * WR);
    std::vector<float> want_t(W * WR);
    for (int r = 0; r < WR; ++r)
        for (int c = 0; c < W; ++c) want_t[c * WR + r] = m[(R - WR + r) * LD + (LD - W) + c];
    print_result("window", t);
    check_result("window", t, want_t);

    // The pitched image.
    const int IW = 100, IH = 30;
    std::vector<float> img(IW * IH), want_img(IW * IH);
    for (int i = 0; i < IW * IH; ++i) {
        img[i] = static_cast<float>(i % 50);
        want_img[i] = img[i] * 1.5f;
    }
    char* dimg = nullptr;
    size_t pitch = 0;
    CHECK(cudaMallocPitch(reinterpret_cast<void**>(&dimg), &pitch, IW * sizeof(float), IH));
    CHECK(cudaMemcpy2D(dimg, pitch, img.data(), IW * sizeof(float), IW * sizeof(float), IH,
                       cudaMemcpyHostToDevice));
    dim3 igrid((IW + block.x - 1) / block.x, (IH + block.y - 1) / block.y);
    scale_rows<<<igrid, block>>>(dimg, pitch, IW, IH, 1.5f);
    CHECK_LAUNCH();
    std::vector<float> out(IW * IH);
    CHECK(cudaMemcpy2D(out.data(), IW * sizeof(float), dimg, pitch, IW * sizeof(float), IH,
                       cudaMemcpyDeviceToHost));
    print_result("image", out);
    check_result("image", out, want_img);

    CHECK(cudaFree(dm));
    CHECK(cudaFree(dt));
    CHECK(cudaFree(dimg));
    return 0;
}
