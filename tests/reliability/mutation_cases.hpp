// The mutation suite's cases (test_mutation.cpp runs them locally, test_mutation_remote.cpp through
// the remote caches): for each backend (nvcc, cmake, nvrtc) a recipe is built once, then each
// input that must change the result is mutated in turn -- a source byte, a header reached only
// through an include directory, a define, host-only code (#ifndef __CUDA_ARCH__), device-only
// code (#if __CUDA_ARCH__ >= 900), an environment variable the toolchain reads, the archs, the
// toolkit's and host compiler's versions -- and the next build must compile into another content
// key; for plugins the artifact must also carry the marker of the inputs it was built from
// (mutation/plugin/plugin.cu). Inputs kiln's design says key nothing -- a file no recipe field
// names, a file's mtime, the checkout's path (recipe paths are relative to the recipe,
// docs/recipes.md) -- must be served from the cache. A comment edit is a miss: kiln keys source
// bytes, not tokens (docs/recipes.md "Keys"). Each run prints its tally: mutations, misses, hits,
// wrong hits (a hit where a miss was required). What a hit and a miss are where the builds go
// through remotes: mutation_bench.hpp.
#pragma once

#include <vector>

#include "reliability/mutation_bench.hpp"

namespace kiln::reliability::mutation {

// Each backend's mutations, in order; `remotes` empty: in one local cache.
void nvcc_mutations(const std::vector<Remote> &remotes = {});
void cmake_mutations(const std::vector<Remote> &remotes = {});
void nvrtc_mutations(const std::vector<Remote> &remotes = {});

}  // namespace kiln::reliability::mutation
