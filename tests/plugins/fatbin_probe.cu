// One tiny kernel: the fat binary reader's fixtures (tests/plugins/CMakeLists.txt) compile it for
// a few arch sets and compression settings, as plain shared objects.
__global__ void fatbin_probe_add_one(float *x) { x[threadIdx.x] += 1.0f; }

extern "C" void fatbin_probe_launch(float *x) { fatbin_probe_add_one<<<1, 32>>>(x); }
