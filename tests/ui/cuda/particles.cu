// A struct passed by value, and a buffer of structs.
struct Params {
    float dt;
    int steps;
    double damping;
};

struct Particle {
    float x, y, z;
    float mass;
};

extern "C" __global__ void integrate(Particle* particles, Params p, int n)
{
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) particles[i].x += p.dt * p.steps * (float)p.damping;
}
