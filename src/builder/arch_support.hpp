// Archs a toolchain cannot build are refused before anything runs (plan included), naming what
// it can build: a typo such as sm_91 is a usage error (exit 2), not a compiler failure later.
#pragma once

#include <string>
#include <vector>

#include <kiln/identity.hpp>

namespace kiln::builder {

// `supported`: compute capabilities (75, 80, ... 121); empty: unknown, nothing is refused.
// `toolchain` names it in the message ("nvcc 13.0.88 (/usr/local/cuda/bin/nvcc)").
void require_supported_archs(const std::vector<Arch> &archs, const std::vector<int> &supported,
                             const std::string &toolchain, const std::string &recipe_file);

}  // namespace kiln::builder
