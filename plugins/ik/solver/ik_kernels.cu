// kiln IK plugin, split form: the device code, compiled by NVRTC (kiln's "nvrtc" backend) into
// device images (a cubin per SASS arch, PTX) from the same kernel body as the nvcc plugin
// (ik_batch.cuh). The split form's host part (ik_split_plugin.cpp) gets the kernel from its host
// through kiln.host.kernels/1 by the extern "C" name below and launches it with one KernelParams.
// recipes/iiwa14-split-kernels.json.in builds it; its include_dirs put solver/rtc (shims for the
// standard headers NVRTC lacks) and the ABI root before the solver.
#include "ik_batch.cuh"

// One by-value KernelParams: the host part checks the size of parameter 0 (cuFuncGetParamInfo)
// against its own sizeof(KernelParams) at activate.
extern "C" __global__ void __launch_bounds__(kBlock) kiln_ik_solve_kernel(const KernelParams p) { solve_batch(p); }
