extern "C" __global__ void broken(float* y, int n)
{
    int i = threadIdx.x;
    y[i] = undefined_name + 1;
}
