// A kernel that takes a struct by value holding device pointers (a CSR graph), so that the
// pointers it may access are fields of one parameter rather than parameters of their own.
//
// out[v] = sum of weight[u] over v's neighbours u. Vertex v has (v % 4) + 1 neighbours.
//
// bug_bad_entry: one adjacency entry (the first neighbour of vertex BAD_VERTEX) is V, a vertex
// that does not exist: that thread reads weight[V], one past the end of `weight`.
// bug_wrong_n: the graph is passed with n = V + 1. Thread V reads row_ptr[V] (its last
// element, fine) and row_ptr[V + 1], one past its end; and writes out[V], one past its end.
// With the bad read suppressed (read as 0) the edge loop is empty, so those are the only two.
#include "common.cuh"

struct Graph {
    const int* row_ptr; // n + 1 offsets into col
    const int* col;     // neighbour ids
    float* out;         // one value per vertex
    int n;
};

__global__ void neighbour_sum(Graph g, const float* weight)
{
    int v = blockIdx.x * blockDim.x + threadIdx.x;
    if (v >= g.n) return;
    int begin = g.row_ptr[v];
    int end = g.row_ptr[v + 1]; // RUN-BUG(bug_wrong_n/row_ptr)
    float s = 0.0f;
    for (int e = begin; e < end; ++e) {
        s += weight[g.col[e]]; // RUN-BUG(bug_bad_entry)
    }
    g.out[v] = s; // RUN-BUG(bug_wrong_n/out)
}

int main(int argc, char** argv)
{
    const char* which = pick_case(argc, argv, {"correct", "bug_bad_entry", "bug_wrong_n"});
    const int V = 300, BAD_VERTEX = 123;
    std::vector<int> row_ptr(V + 1), col;
    for (int v = 0; v < V; ++v) {
        row_ptr[v] = static_cast<int>(col.size());
        for (int k = 0; k <= v % 4; ++k) col.push_back((v * 7 + k * 13 + 1) % V);
    }
    row_ptr[V] = static_cast<int>(col.size());
    std::vector<float> weight(V);
    for (int u = 0; u < V; ++u) weight[u] = static_cast<float>(u % 11) + 0.5f;
    std::vector<float> want(V);
    for (int v = 0; v < V; ++v) {
        float s = 0.0f;
        for (int e = row_ptr[v]; e < row_ptr[v + 1]; ++e) s += weight[col[e]];
        want[v] = s;
    }
    if (is_case(which, "bug_bad_entry")) col[row_ptr[BAD_VERTEX]] = V;

    int* d_row_ptr = to_device(row_ptr);
    int* d_col = to_device(col);
    float* d_weight = to_device(weight);
    float* d_out = nullptr;
    CHECK(cudaMalloc(&d_out, V * sizeof(float)));
    poison(d_out, V * sizeof(float));

    Graph g{d_row_ptr, d_col, d_out, is_case(which, "bug_wrong_n") ? V + 1 : V};
    const int block = 128;
    neighbour_sum<<<(g.n + block - 1) / block, block>>>(g, d_weight);
    CHECK_LAUNCH();

    std::vector<float> out = to_host(d_out, V);
    print_result("out", out);
    check_result("out", out, want);
    CHECK(cudaFree(d_row_ptr));
    CHECK(cudaFree(d_col));
    CHECK(cudaFree(d_weight));
    CHECK(cudaFree(d_out));
    return 0;
}
