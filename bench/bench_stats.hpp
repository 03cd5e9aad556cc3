// The statistics the benches report.
#pragma once

#include <algorithm>
#include <vector>

namespace kiln_bench {

// The middle value (the upper one of an even count): robust to the outliers a shared machine adds.
inline double median(std::vector<double> values) {
  std::sort(values.begin(), values.end());
  return values[values.size() / 2];
}

}  // namespace kiln_bench
