// Memory a kernel reaches that is not cudaMalloc's: mapped pinned host memory
// (cudaHostAlloc with cudaHostAllocMapped), host memory the program registered
// (cudaHostRegister), pinned host memory from cudaMallocHost, and the virtual memory
// management calls (an address range reserved, then physical memory mapped into it in pieces).
//
// fill writes p[i] = base + i for i < n; total sums x[0..n) in one block (each thread a strided
// partial sum, thread 0 adds the partials in order: exact for the small integers used).
//
// bug_mapped:     fill on the mapped buffer of N floats with n = N + 1 (thread N writes one past).
// bug_registered: total on the registered R floats with n = R + 1 (one read past).
// bug_host:       fill on cudaMallocHost's M floats with n = M + 1.
// bug_vmm:        total over the two pieces mapped one after the other (one buffer of
//                 2 x 2 MiB) with n one element longer: the read past lands in the reserved
//                 but unmapped third piece (the plain run dies of it). The correct case reads
//                 exactly across the seam of the two pieces, which is one buffer, not two.
//
// The driver's VMM entry points come from cudaGetDriverEntryPointByVersion: the program does
// not link libcuda (the CUDA runtime's own route to the driver).
#include "common.cuh"

#include <cuda.h>

__global__ void fill(float* p, int n, float base)
{
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) p[i] = base + static_cast<float>(i); // RUN-BUG(fill)
}

__global__ void total(const float* x, int n, float* out)
{
    __shared__ float partial[256];
    float s = 0.0f;
    for (int i = threadIdx.x; i < n; i += blockDim.x) s += x[i]; // RUN-BUG(total)
    partial[threadIdx.x] = s;
    __syncthreads();
    if (threadIdx.x == 0) {
        float t = 0.0f;
        for (int k = 0; k < blockDim.x; ++k) t += partial[k];
        *out = t;
    }
}

template <typename F>
F driver_entry(const char* name)
{
    void* fn = nullptr;
    cudaDriverEntryPointQueryResult status;
    CHECK(cudaGetDriverEntryPointByVersion(name, &fn, 12000, cudaEnableDefault, &status));
    if (status != cudaDriverEntryPointSuccess || fn == nullptr) {
        std::fprintf(stderr, "no driver entry point %s\n", name);
        std::exit(1);
    }
    return reinterpret_cast<F>(fn);
}

#define DRV(call)                                                              \
    do {                                                                       \
        CUresult drv_err_ = (call);                                            \
        if (drv_err_ != CUDA_SUCCESS) {                                        \
            std::fprintf(stderr, "%s:%d: %s failed: %d\n", __FILE__, __LINE__, \
                         #call, static_cast<int>(drv_err_));                   \
            std::exit(1);                                                      \
        }                                                                      \
    } while (0)

static float sum_of(const float* x, int n)
{
    float t = 0.0f;
    std::vector<float> partial(256, 0.0f);
    for (int i = 0; i < n; ++i) partial[i % 256] += x[i];
    for (float p : partial) t += p;
    return t;
}

static void report_total(const char* name, float* d_out, float want)
{
    std::vector<float> got = to_host(d_out, 1);
    print_result(name, got);
    check_result(name, got, std::vector<float>{want});
}

int main(int argc, char** argv)
{
    const char* which =
        pick_case(argc, argv, {"correct", "bug_mapped", "bug_registered", "bug_host", "bug_vmm"});
    float* d_out = nullptr;
    CHECK(cudaMalloc(&d_out, sizeof(float)));

    // Mapped pinned host memory, written by a kernel, read by the host directly.
    {
        const int N = 1000;
        float* h = nullptr;
        float* d = nullptr;
        CHECK(cudaHostAlloc(&h, N * sizeof(float), cudaHostAllocMapped));
        CHECK(cudaHostGetDevicePointer(reinterpret_cast<void**>(&d), h, 0));
        std::memset(h, 0xFF, N * sizeof(float));
        const int n = is_case(which, "bug_mapped") ? N + 1 : N;
        fill<<<(n + 255) / 256, 256>>>(d, n, 3.0f);
        CHECK_LAUNCH();
        std::vector<float> got(h, h + N), want(N);
        for (int i = 0; i < N; ++i) want[i] = 3.0f + static_cast<float>(i);
        print_result("mapped", got);
        check_result("mapped", got, want);
        CHECK(cudaFreeHost(h));
    }

    // Host memory of the program's own, registered.
    {
        const int R = 1500;
        void* raw = std::aligned_alloc(4096, 8192);
        float* h = static_cast<float*>(raw);
        for (int i = 0; i < 2048; ++i) h[i] = static_cast<float>(i % 7);
        CHECK(cudaHostRegister(h, R * sizeof(float), cudaHostRegisterMapped));
        float* d = nullptr;
        CHECK(cudaHostGetDevicePointer(reinterpret_cast<void**>(&d), h, 0));
        poison(d_out, sizeof(float));
        const int n = is_case(which, "bug_registered") ? R + 1 : R;
        total<<<1, 256>>>(d, n, d_out);
        CHECK_LAUNCH();
        report_total("registered", d_out, sum_of(h, R));
        CHECK(cudaHostUnregister(h));
        std::free(raw);
    }

    // cudaMallocHost.
    {
        const int M = 600;
        float* h = nullptr;
        CHECK(cudaMallocHost(&h, M * sizeof(float)));
        std::memset(h, 0xFF, M * sizeof(float));
        const int n = is_case(which, "bug_host") ? M + 1 : M;
        fill<<<(n + 255) / 256, 256>>>(h, n, 5.0f);
        CHECK_LAUNCH();
        std::vector<float> got(h, h + M), want(M);
        for (int i = 0; i < M; ++i) want[i] = 5.0f + static_cast<float>(i);
        print_result("host", got);
        check_result("host", got, want);
        CHECK(cudaFreeHost(h));
    }

    // Virtual memory management: three pieces reserved, two mapped, one after the other.
    {
        using Reserve = CUresult (*)(CUdeviceptr*, size_t, size_t, CUdeviceptr, unsigned long long);
        using AddrFree = CUresult (*)(CUdeviceptr, size_t);
        using Create = CUresult (*)(CUmemGenericAllocationHandle*, size_t,
                                    const CUmemAllocationProp*, unsigned long long);
        using Release = CUresult (*)(CUmemGenericAllocationHandle);
        using Map = CUresult (*)(CUdeviceptr, size_t, size_t, CUmemGenericAllocationHandle,
                                 unsigned long long);
        using Unmap = CUresult (*)(CUdeviceptr, size_t);
        using SetAccess = CUresult (*)(CUdeviceptr, size_t, const CUmemAccessDesc*, size_t);
        using Granularity = CUresult (*)(size_t*, const CUmemAllocationProp*,
                                         CUmemAllocationGranularity_flags);
        auto reserve = driver_entry<Reserve>("cuMemAddressReserve");
        auto addr_free = driver_entry<AddrFree>("cuMemAddressFree");
        auto create = driver_entry<Create>("cuMemCreate");
        auto release = driver_entry<Release>("cuMemRelease");
        auto map = driver_entry<Map>("cuMemMap");
        auto unmap = driver_entry<Unmap>("cuMemUnmap");
        auto set_access = driver_entry<SetAccess>("cuMemSetAccess");
        auto granularity = driver_entry<Granularity>("cuMemGetAllocationGranularity");

        int dev = 0;
        CHECK(cudaGetDevice(&dev));
        CUmemAllocationProp prop = {};
        prop.type = CU_MEM_ALLOCATION_TYPE_PINNED;
        prop.location.type = CU_MEM_LOCATION_TYPE_DEVICE;
        prop.location.id = dev;
        size_t gran = 0;
        DRV(granularity(&gran, &prop, CU_MEM_ALLOC_GRANULARITY_MINIMUM));
        const size_t piece = size_t(2) << 20;
        if (gran == 0 || piece % gran != 0) {
            std::fprintf(stderr, "allocation granularity %zu does not divide 2 MiB\n", gran);
            return 1;
        }
        CUdeviceptr base = 0;
        DRV(reserve(&base, 3 * piece, 0, 0, 0));
        CUmemGenericAllocationHandle h0, h1;
        DRV(create(&h0, piece, &prop, 0));
        DRV(create(&h1, piece, &prop, 0));
        // The second piece first: the order of the mappings does not matter.
        DRV(map(base + piece, piece, 0, h1, 0));
        DRV(map(base, piece, 0, h0, 0));
        CUmemAccessDesc access = {};
        access.location = prop.location;
        access.flags = CU_MEM_ACCESS_FLAGS_PROT_READWRITE;
        DRV(set_access(base, 2 * piece, &access, 1));

        const int V = static_cast<int>(2 * piece / sizeof(float));
        float* d = reinterpret_cast<float*>(base);
        fill<<<(V + 255) / 256, 256>>>(d, V, 0.0f);
        CHECK_LAUNCH();
        // Then small integers (the index mod 8), so that the sum is exact.
        std::vector<float> h(V);
        for (int i = 0; i < V; ++i) h[i] = static_cast<float>(i % 8);
        CHECK(cudaMemcpy(d, h.data(), V * sizeof(float), cudaMemcpyHostToDevice));
        poison(d_out, sizeof(float));
        const int n = is_case(which, "bug_vmm") ? V + 1 : V;
        total<<<1, 256>>>(d, n, d_out);
        CHECK_LAUNCH();
        report_total("vmm", d_out, sum_of(h.data(), V));

        DRV(unmap(base, 2 * piece));
        DRV(release(h0));
        DRV(release(h1));
        DRV(addr_free(base, 3 * piece));
    }

    CHECK(cudaFree(d_out));
    return 0;
}
