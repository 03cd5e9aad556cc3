// kiln internal: running a recipe's generator steps into {gen}, each served from the consumer's
// object cache when a step with the same tool, command and input bytes ran before -- so the N=32,
// 64 and 128 variants of one module (recipes differing only in an option) generate once.
#pragma once

#include <string>

#include <boost/filesystem/path.hpp>

#include <kiln/log.hpp>
#include <kiln/recipe.hpp>

#include "builder/keys.hpp"
#include "builder/process.hpp"
#include "store/layout.hpp"

namespace kiln::builder {

struct GeneratorContext {
  const Recipe &recipe;
  const BuildIdentity &identity;  // the generators' tool identities
  const BuildOptions &options;    // force: run every step (and refresh the cache)
  const store::ConsumerLayout &layout;
  boost::filesystem::path gen;        // {gen}
  boost::filesystem::path build_log;  // appended to
  CancelToken &cancel;
  const LogCallback &log;
};

// Runs (or reuses) every step in order; throws BuildError for a failed step or a declared output
// it did not write, and Error "cancelled" when the token is cancelled.
void run_generators(const GeneratorContext &context);

// The cache key of step `index`: its tool identity, its command (as written, {gen} and {tool}
// unexpanded), its inputs' names and bytes, its outputs' names and the bytes of what earlier
// steps wrote into {gen} (a step may read them).
std::string generator_key(const GeneratorContext &context, std::size_t index);

}  // namespace kiln::builder
