// What every program of tests/run/cpp shares: the case taken from argv, the CHECK macro, and
// output that is the same, byte for byte, from one run to the next.
//
// Conventions (scripts/run-programs.sh relies on them):
// - `prog CASE` runs the case; `prog --list` prints the case names, one a line, so the checker
//   can tell that tests/run/expected.json covers every case the program has.
// - `correct` runs every kernel of the program with the right arguments; `bug_*` runs the same
//   kernels with one mistake planted. The line of the bad access carries `RUN-BUG(<case>)`
//   (or `RUN-BUG(<case>/<tag>)` where one case faults on two lines): the checker takes the
//   expected line from the marker, so the manifest cannot go stale when lines move.
// - Results go to stdout as hex floats and an FNV-1a hash of the bytes, plus a comparison with
//   a CPU reference ("check NAME: ok" or "check NAME: MISMATCH ..."). Inputs are small integers
//   or halves so the GPU's arithmetic is exact and the reference can demand equality.
// - Exit status 0 unless a CUDA call fails: CHECK prints the error to stderr and exits 1.
//   A launch refused for its configuration is the exception the program expects and reports on
//   stdout (see launch_config.cu).
#pragma once

#include <cuda_runtime.h>

#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <initializer_list>
#include <vector>

#define CHECK(call)                                                                          \
    do {                                                                                     \
        cudaError_t check_err_ = (call);                                                     \
        if (check_err_ != cudaSuccess) {                                                     \
            std::fprintf(stderr, "%s:%d: %s failed: %s (%s)\n", __FILE__, __LINE__, #call,   \
                         cudaGetErrorName(check_err_), cudaGetErrorString(check_err_));      \
            std::exit(1);                                                                    \
        }                                                                                    \
    } while (0)

// A launch's own error, then the kernel's: the CHECK after every launch.
#define CHECK_LAUNCH()                           \
    do {                                         \
        CHECK(cudaGetLastError());               \
        CHECK(cudaDeviceSynchronize());          \
    } while (0)

// The case named on the command line, one of `names`; `--list` prints them and exits.
inline const char* pick_case(int argc, char** argv, std::initializer_list<const char*> names)
{
    if (argc == 2 && std::strcmp(argv[1], "--list") == 0) {
        for (const char* n : names) std::printf("%s\n", n);
        std::exit(0);
    }
    if (argc == 2) {
        for (const char* n : names)
            if (std::strcmp(argv[1], n) == 0) return n;
    }
    std::fprintf(stderr, "usage: %s CASE (or --list); cases:", argv[0]);
    for (const char* n : names) std::fprintf(stderr, " %s", n);
    std::fprintf(stderr, "\n");
    std::exit(2);
}

inline bool is_case(const char* chosen, const char* name) { return std::strcmp(chosen, name) == 0; }

inline uint64_t fnv1a(const void* data, size_t bytes)
{
    const unsigned char* p = static_cast<const unsigned char*>(data);
    uint64_t h = 0xcbf29ce484222325ull;
    for (size_t i = 0; i < bytes; ++i) {
        h ^= p[i];
        h *= 0x100000001b3ull;
    }
    return h;
}

// Every output buffer is poisoned (all bits set: NaN for floats) before its kernel runs, so a
// kernel that did not run, or skipped elements, cannot pass for one that did.
inline void poison(void* device_ptr, size_t bytes) { CHECK(cudaMemset(device_ptr, 0xFF, bytes)); }

inline void print_value(double v) { std::printf(" %a", v); }
inline void print_value(float v) { std::printf(" %a", static_cast<double>(v)); }
inline void print_value(int v) { std::printf(" %d", v); }
inline void print_value(unsigned v) { std::printf(" %u", v); }
inline void print_value(unsigned char v) { std::printf(" %u", static_cast<unsigned>(v)); }

// One line per result: its length, the hash of its bytes, and its first and last few values.
template <typename T>
void print_result(const char* name, const std::vector<T>& v)
{
    std::printf("%s: n=%zu fnv=%016llx", name, v.size(),
                static_cast<unsigned long long>(fnv1a(v.data(), v.size() * sizeof(T))));
    const size_t shown = 3;
    std::printf(" head");
    for (size_t i = 0; i < v.size() && i < shown; ++i) print_value(v[i]);
    std::printf(" tail");
    for (size_t i = v.size() > shown ? v.size() - shown : 0; i < v.size(); ++i) print_value(v[i]);
    std::printf("\n");
}

// Exact comparison with the CPU reference, bit for bit (NaN poison never equals).
template <typename T>
void check_result(const char* name, const std::vector<T>& got, const std::vector<T>& want)
{
    size_t bad = 0, first = 0;
    for (size_t i = 0; i < got.size() && i < want.size(); ++i) {
        if (std::memcmp(&got[i], &want[i], sizeof(T)) != 0) {
            if (bad == 0) first = i;
            ++bad;
        }
    }
    if (got.size() != want.size()) {
        std::printf("check %s: MISMATCH size %zu, expected %zu\n", name, got.size(), want.size());
    } else if (bad == 0) {
        std::printf("check %s: ok\n", name);
    } else {
        std::printf("check %s: MISMATCH %zu of %zu, first at %zu:", name, bad, got.size(), first);
        print_value(got[first]);
        std::printf(" expected");
        print_value(want[first]);
        std::printf("\n");
    }
}

template <typename T>
std::vector<T> to_host(const T* device_ptr, size_t n)
{
    std::vector<T> h(n);
    CHECK(cudaMemcpy(h.data(), device_ptr, n * sizeof(T), cudaMemcpyDeviceToHost));
    return h;
}

template <typename T>
T* to_device(const std::vector<T>& h)
{
    T* d = nullptr;
    CHECK(cudaMalloc(&d, h.size() * sizeof(T)));
    CHECK(cudaMemcpy(d, h.data(), h.size() * sizeof(T), cudaMemcpyHostToDevice));
    return d;
}
