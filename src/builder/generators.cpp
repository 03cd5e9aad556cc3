#include "builder/generators.hpp"

#include <boost/filesystem/operations.hpp>

#include <kiln/errors.hpp>

#include "builder/backend.hpp"
#include "builder/backends/nvcc.hpp"
#include "files/digest.hpp"
#include "files/files.hpp"
#include "support/words.hpp"

namespace kiln::builder {
namespace {

namespace fs = boost::filesystem;

// objects/gen-<key>-<output> per output, then objects/gen-<key>.digests ("<digest> <output>"
// lines) written last: a step is reused only when the digests exist and every file matches.
fs::path cached_output(const GeneratorContext &context, const std::string &key, const std::string &output) {
  return context.layout.objects() / ("gen-" + key + "-" + output);
}
fs::path digests_file(const GeneratorContext &context, const std::string &key) {
  return context.layout.objects() / ("gen-" + key + ".digests");
}

// Copies the cached outputs into {gen} and checks the copies against the recorded digests (the
// copies, not the cache: a writer may replace a cached file meanwhile). False, with the copies
// removed, when any is absent or differs.
bool reuse(const GeneratorContext &context, const GeneratorStep &step, const std::string &key) {
  std::string recorded;
  try {
    recorded = files::read_file(digests_file(context, key), files::FileOrigin::store, 1 << 20);
  } catch (const Error &) {
    return false;  // never cached (or its writer died before recording it)
  }
  bool intact = true;
  for (const auto &output : step.outputs) {
    try {
      files::copy_file_synced(cached_output(context, key, output), context.gen / output);
      intact = recorded.find(input_file_digest(context.gen / output) + " " + output + "\n") != std::string::npos;
    } catch (const Error &) {
      intact = false;
    }
    if (!intact) break;
  }
  if (!intact) {
    boost::system::error_code ignored;
    for (const auto &output : step.outputs) fs::remove(context.gen / output, ignored);
  }
  return intact;
}

// Into the cache through temps (swept like the object cache's); failing to cache is no error.
void remember(const GeneratorContext &context, const GeneratorStep &step, const std::string &key) try {
  std::string digests;
  for (const auto &output : step.outputs) {
    const fs::path temp = context.layout.objects() / (".gen-" + key + ".tmp-" + files::unique_suffix());
    files::copy_file_synced(context.gen / output, temp);
    digests += input_file_digest(temp) + " " + output + "\n";
    fs::rename(temp, cached_output(context, key, output));
  }
  files::write_file_atomic(digests_file(context, key), digests);
} catch (const std::exception &error) {
  if (context.log) context.log(LogLevel::warning, std::string("generator cache not written: ") + error.what());
}

}  // namespace

std::string generator_key(const GeneratorContext &context, std::size_t index) {
  const Recipe &recipe = context.recipe;
  const GeneratorStep &step = recipe.generators[index];
  files::Hasher key;
  key.add_field("key", "generator").add_field("tool", context.identity.generators.at(step.name)).add_list("command", step.command);
  for (const auto &input : step.inputs) key.add_field(abstract_path(input, recipe.base_dir), input_file_digest(input));
  key.add_list("outputs", step.outputs);
  for (std::size_t earlier = 0; earlier < index; ++earlier) {
    for (const auto &output : recipe.generators[earlier].outputs) key.add_field("gen/" + output, input_file_digest(context.gen / output));
  }
  return key.hex();
}

void run_generators(const GeneratorContext &context) {
  const Recipe &recipe = context.recipe;
  const BuildOptions &options = context.options;
  const auto check_cancel = [&] {
    if (context.cancel.cancelled()) {
      throw Error(ErrorKind::other, "build of " + recipe.consumer + "/" + recipe.name + " cancelled; nothing was published");
    }
  };
  if (!recipe.generators.empty()) files::create_directories(context.layout.objects());
  for (std::size_t index = 0; index < recipe.generators.size(); ++index) {
    const GeneratorStep &generator = recipe.generators[index];
    check_cancel();
    if (options.progress) options.progress({BuildEvent::Kind::generator_started, generator.name, 0, false});
    const std::string key = generator_key(context, index);
    if (!options.force && reuse(context, generator, key)) {
      append_log(context.build_log, "\n(generator " + generator.name + ") reused the outputs of an identical step (" + key + ")\n");
      if (options.progress) options.progress({BuildEvent::Kind::generator_finished, generator.name, 0, true});
      continue;
    }
    ProcessSpec spec;
    spec.argv = substitute(generator.command, {{"{gen}", context.gen.string()}, {"{tool}", generator.tool}});
    spec.cwd = recipe.base_dir;
    spec.log_file = context.build_log.string();
    spec.cancel = &context.cancel;
    append_log(context.build_log, "\n$ (generator " + generator.name + ") " + support::join_words(spec.argv) + "\n");
    const ProcessResult run = run_process(spec);
    if (run.cancelled) check_cancel();
    if (!run.ok()) fail_step("generator " + generator.name, run);
    for (const auto &output : generator.outputs) {
      if (!fs::is_regular_file(context.gen / output)) {
        throw BuildError("generator " + generator.name + " did not write its declared output " + output +
                             " into {gen}; fix the step's command or its \"outputs\"",
                         run.output);
      }
    }
    remember(context, generator, key);
    if (options.progress) options.progress({BuildEvent::Kind::generator_finished, generator.name, run.seconds, false});
  }
}

}  // namespace kiln::builder
