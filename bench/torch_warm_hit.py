"""Baseline for kiln_bench_fresh_load: PyTorch's cpp_extension.load warm hit of a one-kernel CUDA
extension, in this fresh Python process. `import torch` is not timed (kiln's figure does not
include loading a framework either); the call to load() is. The first call of a build directory
compiles (run it once with --prepare); every later process finds the build and only checks and
imports it: that check-and-import is what is timed.

Prints one line: "ms <milliseconds>" or "failed <why>"."""
import os
import sys
import time

KERNEL = r'''
#include <torch/extension.h>
__global__ void scale_kernel(float *x, float a, int n) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n) x[i] *= a;
}
void scale(torch::Tensor x, double a) {
  int n = x.numel();
  scale_kernel<<<(n + 255) / 256, 256>>>(x.data_ptr<float>(), static_cast<float>(a), n);
}
PYBIND11_MODULE(TORCH_EXTENSION_NAME, m) { m.def("scale", &scale); }
'''


def main():
    work = sys.argv[1]
    try:
        import torch  # noqa: F401  (not timed)
        from torch.utils import cpp_extension
    except Exception as error:  # a baseline that cannot run is reported, never guessed
        print("failed import torch: %s" % error)
        return 0
    source = os.path.join(work, "scale_ext.cu")
    if not os.path.exists(source):
        with open(source, "w") as out:
            out.write(KERNEL)
    build = os.path.join(work, "torch_build")
    os.makedirs(build, exist_ok=True)
    try:
        start = time.perf_counter()
        cpp_extension.load(name="kiln_bench_scale", sources=[source], build_directory=build, verbose=False)
        elapsed = (time.perf_counter() - start) * 1000.0
    except Exception as error:
        print("failed cpp_extension.load: %s" % str(error).splitlines()[0] if str(error) else error)
        return 0
    print("ms %.3f" % elapsed)
    return 0


if __name__ == "__main__":
    sys.exit(main())
