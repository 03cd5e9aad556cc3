// kiln_reliability_host: a multi-threaded library host for the concurrency test. Several threads
// share one kiln::Runtime (as a controller process would) and, until the deadline, ensure, build
// and load the same names the test's CLI processes build, publish and load at the same time.
//
//   kiln_reliability_host <store> <plan file> <threads> <seconds> <seed> <start ns> <period s>
//
// The plan file has one line per recipe variant: "<epoch> <backend> <name> <recipe file>". The
// variant of epoch floor((steady now - start) / period) is the current one (the same clock as
// the test's). Prints one JSON object (ops, errors, outcomes per input key); exits 1 when an
// error happened that the concurrency test does not allow (tests/reliability/test_concurrency.cpp).
#include <atomic>
#include <chrono>
#include <fstream>
#include <iostream>
#include <map>
#include <mutex>
#include <random>
#include <sstream>
#include <thread>
#include <vector>

#include <nlohmann/json.hpp>

#include <kiln/errors.hpp>
#include <kiln/recipe.hpp>
#include <kiln/runtime.hpp>
#include <kiln/store.hpp>

namespace {

using nlohmann::json;
using Clock = std::chrono::steady_clock;

struct Variant {
  long epoch = 0;
  std::string backend, name, file;
};

struct Tally {
  std::mutex mutex;
  std::map<std::string, long> ops;
  std::vector<std::string> errors;           // not allowed
  std::map<std::string, long> allowed;       // allowed errors, by reason
  std::vector<json> builds;                  // {"key", "outcome", "backend", "recipe"}

  void op(const std::string &what) {
    std::lock_guard<std::mutex> lock(mutex);
    ++ops[what];
  }
};

}  // namespace

int main(int argc, char **argv) {
  if (argc != 8) {
    std::cerr << "usage: kiln_reliability_host <store> <plan> <threads> <seconds> <seed> <start ns> <period s>\n";
    return 2;
  }
  const std::string store = argv[1];
  std::vector<Variant> variants;
  {
    std::ifstream plan(argv[2]);
    for (Variant v; plan >> v.epoch >> v.backend >> v.name >> v.file;) variants.push_back(v);
  }
  const int threads = std::stoi(argv[3]);
  const double seconds = std::stod(argv[4]);
  const unsigned seed = static_cast<unsigned>(std::stoul(argv[5]));
  const Clock::time_point start{std::chrono::nanoseconds(std::stoll(argv[6]))};
  const double period = std::stod(argv[7]);
  const auto deadline = Clock::now() + std::chrono::duration_cast<Clock::duration>(std::chrono::duration<double>(seconds));

  kiln::RuntimeOptions options;
  options.cache_dir = store;
  options.declared_device = "sm_90";
  kiln::Runtime runtime(options);  // shared by every thread
  Tally tally;

  // The variants of the current epoch (those of the last epoch planned once past it).
  const auto current = [&](const std::string &backend) {
    const long epoch = static_cast<long>(std::chrono::duration<double>(Clock::now() - start).count() / period);
    std::vector<const Variant *> found;
    long best = -1;
    for (const auto &v : variants) {
      if (v.backend == backend && v.epoch <= epoch) best = std::max(best, v.epoch);
    }
    for (const auto &v : variants) {
      if (v.backend == backend && v.epoch == best) found.push_back(&v);
    }
    return found;
  };

  std::vector<std::thread> workers;
  for (int t = 0; t < threads; ++t) {
    workers.emplace_back([&, t] {
      std::mt19937 random(seed * 1000 + static_cast<unsigned>(t));
      std::vector<std::string> ensured;  // names this thread has ensured: loading them must work
      while (Clock::now() < deadline) {
        const int pick = static_cast<int>(random() % 10);
        std::string what;
        try {
          if (pick < 3) {  // ensure a plugin recipe: build on miss, then load what was built
            const auto choices = current("fake-nvcc");
            if (choices.empty()) continue;
            const Variant &v = *choices[random() % choices.size()];
            what = "ensure " + v.name;
            const kiln::Recipe recipe = kiln::Recipe::load(v.file);
            kiln::Module module = runtime.ensure(recipe);
            ensured.push_back(v.name);
          } else if (pick < 6) {  // build a plugin or device-image recipe
            const auto choices = current(random() % 2 == 0 ? "nvrtc" : "fake-nvcc");
            if (choices.empty()) continue;
            const Variant &v = *choices[random() % choices.size()];
            what = "build " + v.name;
            const kiln::BuildResult result = runtime.build(kiln::Recipe::load(v.file));
            std::lock_guard<std::mutex> lock(tally.mutex);
            tally.builds.push_back({{"key", result.input_key}, {"outcome", kiln::to_string(result.outcome)},
                                    {"backend", v.backend}, {"recipe", v.file}});
          } else if (pick < 9) {  // load a name this thread ensured (it exists: never NotFound)
            if (ensured.empty()) continue;
            const std::string name = ensured[random() % ensured.size()];
            what = "load " + name;
            kiln::Module module = runtime.load("conc", name);
            kiln::Instance instance = module.create_instance();
          } else {
            what = "list";
            runtime.list("conc");
          }
          tally.op(what.substr(0, what.find(' ')));
        } catch (const kiln::IntegrityError &error) {
          // Runtime::ensure's documented race: another writer pointed the name at another
          // build between this ensure's build and its resolve (src/runtime/build.cpp).
          const bool replaced = what.rfind("ensure", 0) == 0 &&
                                std::string(error.what()).find("another writer replaced it meanwhile") != std::string::npos;
          std::lock_guard<std::mutex> lock(tally.mutex);
          if (replaced) {
            ++tally.allowed["ensure: replaced meanwhile by another variant's build"];
          } else {
            tally.errors.push_back(what + ": " + error.what());
          }
        } catch (const std::exception &error) {
          std::lock_guard<std::mutex> lock(tally.mutex);
          tally.errors.push_back(what + ": " + error.what());
        }
      }
    });
  }
  for (auto &worker : workers) worker.join();

  json out = {{"threads", threads}, {"ops", tally.ops}, {"errors", tally.errors}, {"allowed", tally.allowed},
              {"builds", tally.builds}};
  std::cout << out.dump() << std::endl;
  return tally.errors.empty() ? 0 : 1;
}
