// One robot's GPU side for kiln_bench_rnea --kdl (rnea_bench_kdl.hpp): the bench's kernel
// (rnea_bench_kernel.cuh) on the generated header of KILN_BENCH_RNEA_KDL_ID, fp32 and fp64, on
// the states of a KDL file. No timing: one launch, the torques back.
#include <cuda_runtime.h>

#include <stdexcept>

#include "kiln_rnea_chain.cuh"  // <build>/bench/<id>/
#include "rnea_bench_kdl.hpp"
#include "rnea_bench_kernel.cuh"

namespace kiln_bench_rnea {
namespace KILN_BENCH_RNEA_KDL_ID {

namespace {

using KdlGpuChain = kiln_rnea::Chain;

void kdl_gpu_check(cudaError_t result, const char *what) {
  if (result != cudaSuccess) throw std::runtime_error(std::string(what) + ": " + cudaGetErrorString(result));
}

// Frees what it allocated on every path out.
struct KdlGpuBuffers {
  std::vector<void *> device;
  ~KdlGpuBuffers() {
    for (void *p : device) cudaFree(p);
  }
  template <class T>
  T *alloc(size_t count) {
    void *p = nullptr;
    kdl_gpu_check(cudaMalloc(&p, count * sizeof(T)), "cudaMalloc");
    device.push_back(p);
    return static_cast<T *>(p);
  }
  template <class T>
  const T *upload(const std::vector<T> &host) {
    T *p = alloc<T>(host.size());
    kdl_gpu_check(cudaMemcpy(p, host.data(), host.size() * sizeof(T), cudaMemcpyHostToDevice), "cudaMemcpy");
    return p;
  }
};

template <class T>
std::string kdl_gpu_evaluate(const std::vector<T> &q, const std::vector<T> &qd, const std::vector<T> &qdd, size_t n,
                             std::vector<T> &tau) {
  const size_t elements = n * KdlGpuChain::kDof;
  if (q.size() != elements || qd.size() != elements || qdd.size() != elements) return "the states are not n x dof";
  try {
    KdlGpuBuffers b;
    const T *dq = b.upload(q), *dqd = b.upload(qd), *dqdd = b.upload(qdd);
    T *dtau = b.alloc<T>(elements);
    int min_grid = 0, block = 0;
    kdl_gpu_check(cudaOccupancyMaxPotentialBlockSize(&min_grid, &block, rnea_batch<KdlGpuChain, T>),
                  "cudaOccupancyMaxPotentialBlockSize");
    const unsigned blocks = static_cast<unsigned>((n + block - 1) / block);
    rnea_batch<KdlGpuChain, T><<<blocks, block>>>(dq, dqd, dqdd, dtau, n, n);
    kdl_gpu_check(cudaGetLastError(), "rnea_batch launch");
    kdl_gpu_check(cudaDeviceSynchronize(), "rnea_batch");
    tau.assign(elements, T(0));
    kdl_gpu_check(cudaMemcpy(tau.data(), dtau, elements * sizeof(T), cudaMemcpyDeviceToHost), "cudaMemcpy");
  } catch (const std::exception &error) {
    return error.what();
  }
  return "";
}

}  // namespace

std::string gpu_float(const std::vector<float> &q, const std::vector<float> &qd, const std::vector<float> &qdd,
                      size_t n, std::vector<float> &tau) {
  return kdl_gpu_evaluate(q, qd, qdd, n, tau);
}
std::string gpu_double(const std::vector<double> &q, const std::vector<double> &qd, const std::vector<double> &qdd,
                       size_t n, std::vector<double> &tau) {
  return kdl_gpu_evaluate(q, qd, qdd, n, tau);
}

}  // namespace KILN_BENCH_RNEA_KDL_ID
}  // namespace kiln_bench_rnea
