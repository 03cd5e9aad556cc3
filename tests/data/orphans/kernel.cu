// Never compiled: the orphan tests' fake nvcc only pretends to.
__global__ void never_built() {}
