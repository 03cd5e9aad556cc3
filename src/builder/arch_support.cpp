#include "builder/arch_support.hpp"

#include <algorithm>

#include <kiln/errors.hpp>

namespace kiln::builder {

void require_supported_archs(const std::vector<Arch> &archs, const std::vector<int> &supported,
                             const std::string &toolchain, const std::string &recipe_file) {
  if (supported.empty()) return;
  for (const auto &arch : archs) {
    if (std::find(supported.begin(), supported.end(), arch.cc()) != supported.end()) continue;
    std::vector<int> sorted = supported;
    std::sort(sorted.begin(), sorted.end());
    std::string list;
    for (int cc : sorted) list += (list.empty() ? "" : ", ") + std::string("sm_") + std::to_string(cc);
    throw UsageError("recipe " + recipe_file + ": " + toolchain + " cannot build " + arch.to_string() +
                     "; it builds " + list + " (compute_XY for PTX of the same): fix \"archs\" in the recipe or --arch");
  }
}

}  // namespace kiln::builder
