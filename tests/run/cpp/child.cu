// A program whose CUDA work is split between it and a process it starts (a test runner, a
// worker pool, a build script that runs a tool): `cudacheck run` checks the launches of both.
//
// The parent doubles a vector, then runs itself again as a child (`--child CASE`) and waits;
// the child, a process with a CUDA context of its own, computes a moving sum of 3 values.
// bug_child: the child's moving sum runs for i < n - 1 instead of i < n - 2: thread n - 2 reads
// x[n], one past the end of the input.
#include "common.cuh"

#include <spawn.h>
#include <sys/wait.h>
#include <unistd.h>

extern char** environ;

__global__ void twice(const float* x, float* y, int n)
{
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) y[i] = 2.0f * x[i];
}

__global__ void moving_sum3(const float* x, float* y, int n_out)
{
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n_out) y[i] = x[i] + x[i + 1] + x[i + 2]; // RUN-BUG(bug_child)
}

static int child(bool bug)
{
    const int n = 300;
    std::vector<float> h(n);
    for (int i = 0; i < n; ++i) h[i] = static_cast<float>(i % 13);
    const int n_out = bug ? n - 1 : n - 2;
    std::vector<float> want(n - 2);
    for (int i = 0; i < n - 2; ++i) want[i] = h[i] + h[i + 1] + h[i + 2];
    float* d_x = to_device(h);
    float* d_y = nullptr;
    CHECK(cudaMalloc(&d_y, n * sizeof(float)));
    poison(d_y, n * sizeof(float));
    moving_sum3<<<(n_out + 127) / 128, 128>>>(d_x, d_y, n_out);
    CHECK_LAUNCH();
    std::vector<float> got = to_host(d_y, n - 2);
    print_result("child moving_sum3", got);
    check_result("child moving_sum3", got, want);
    CHECK(cudaFree(d_x));
    CHECK(cudaFree(d_y));
    std::fflush(stdout);
    return 0;
}

int main(int argc, char** argv)
{
    if (argc == 3 && std::strcmp(argv[1], "--child") == 0) return child(std::strcmp(argv[2], "bug") == 0);
    const char* which = pick_case(argc, argv, {"correct", "bug_child"});

    const int n = 1000;
    std::vector<float> h(n), want(n);
    for (int i = 0; i < n; ++i) {
        h[i] = static_cast<float>(i % 17);
        want[i] = 2.0f * h[i];
    }
    float* d_x = to_device(h);
    float* d_y = nullptr;
    CHECK(cudaMalloc(&d_y, n * sizeof(float)));
    poison(d_y, n * sizeof(float));
    twice<<<(n + 255) / 256, 256>>>(d_x, d_y, n);
    CHECK_LAUNCH();
    std::vector<float> got = to_host(d_y, n);
    print_result("parent twice", got);
    check_result("parent twice", got, want);
    std::fflush(stdout);

    // The child: this program again, found through /proc (a path the launcher cannot guess).
    char self[4096];
    ssize_t len = readlink("/proc/self/exe", self, sizeof self - 1);
    if (len <= 0) {
        std::fprintf(stderr, "cannot find /proc/self/exe\n");
        return 1;
    }
    self[len] = '\0';
    char child_flag[] = "--child";
    char mode_bug[] = "bug";
    char mode_ok[] = "ok";
    char* child_argv[] = {self, child_flag, is_case(which, "bug_child") ? mode_bug : mode_ok, nullptr};
    pid_t pid = 0;
    if (posix_spawn(&pid, self, nullptr, nullptr, child_argv, environ) != 0) {
        std::fprintf(stderr, "posix_spawn failed\n");
        return 1;
    }
    int status = 0;
    if (waitpid(pid, &status, 0) != pid) {
        std::fprintf(stderr, "waitpid failed\n");
        return 1;
    }
    std::printf("child exited %d\n", WIFEXITED(status) ? WEXITSTATUS(status) : -1);
    CHECK(cudaFree(d_x));
    CHECK(cudaFree(d_y));
    return 0;
}
