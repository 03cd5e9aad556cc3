// Why the entry a store holds for a recipe's consumer/name does not serve the current inputs
// (docs/architecture.md §3): every differing field, named for people, as GRiD's stale_hit_reasons does.
#pragma once

#include <map>
#include <string>
#include <vector>

#include <kiln/errors.hpp>

#include "builder/keys.hpp"

namespace kiln::builder {

// `recorded`: the entry's identity.json provenance. Identity fields are named ("nvcc: recorded
// 13.0.48, current 13.9.1", "host compiler: ...", "archs: ..."); input records are compared
// when the entry has them ("source plugin.cu: recorded <digest>, current <digest>", "define N:
// recorded 32, current 64", "recipe flags: ..."; "(none)" where one side lacks the input).
// Entries of kilns that recorded no inputs, or a change in something not recorded, still give
// one reason ("inputs": the two input keys). Empty when the entry was built from these inputs.
std::vector<Reason> stale_reasons(const std::map<std::string, std::string> &recorded, const BuildIdentity &identity,
                                  const InputRecords &records, const std::string &input_key);

}  // namespace kiln::builder
