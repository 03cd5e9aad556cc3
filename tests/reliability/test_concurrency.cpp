// Many processes and threads on one store at once: CLI processes building, loading, publishing
// and listing a few names, plus one multi-threaded library host (host.cpp) ensuring, building and
// loading the same names. Recipe variants change every few seconds (a new input key for every
// name at once, so every worker misses together), and publishes flip names between entries.
//
// Allowed errors, and why (everything else is unexpected and fails the test):
//  * `kiln load`/`kiln show` of a name exits 3 (NotFound) when it started before the first
//    publish or build naming it had finished: the name did not exist yet.
//  * Runtime::ensure in the host throws IntegrityError "another writer replaced it meanwhile"
//    when another process pointed the name at another variant's build between the ensure's
//    build and its resolve (src/runtime/build.cpp: ensure loads exactly what it built or fails).
// Exactly one compile per input key: every unit command line is compiled at most once (the
// compile log), the links are as many as the plugin input keys in the store (bykey/), no input
// key is compiled by two builders (outcome built or reused), every NVRTC input key by one.
#include <doctest/doctest.h>

#include <atomic>
#include <chrono>
#include <fstream>
#include <map>
#include <mutex>
#include <random>
#include <set>
#include <thread>

#include <boost/filesystem/operations.hpp>
#include <nlohmann/json.hpp>

#include "reliability/child.hpp"
#include "reliability/store_check.hpp"
#include "reliability/suite.hpp"
#include "reliability/workspace.hpp"
#include "support/fixtures.hpp"

using namespace kiln::reliability;
using kiln::test::TempDir;
using nlohmann::json;
namespace fs = boost::filesystem;
using Clock = std::chrono::steady_clock;

namespace {

constexpr const char *kConsumer = "conc";

struct Tally {
  std::mutex mutex;
  std::map<std::string, long> ops;                  // by verb
  std::vector<std::string> unexpected;
  std::map<std::string, long> allowed;              // by reason
  std::map<std::string, double> first_named;        // name -> when the first op naming it finished
  std::map<std::string, std::map<std::string, int>> outcomes;  // input key -> outcome -> count
  std::map<std::string, std::set<std::string>> recipe_keys;    // recipe file -> input keys reported

  void named(const std::string &name) {
    std::lock_guard<std::mutex> lock(mutex);
    if (first_named.count(name) == 0) first_named[name] = now_seconds();
  }
  bool existed_before(const std::string &name, double when) {
    std::lock_guard<std::mutex> lock(mutex);
    const auto found = first_named.find(name);
    return found != first_named.end() && found->second <= when;
  }
  void fail(const std::string &what) {
    std::lock_guard<std::mutex> lock(mutex);
    unexpected.push_back(what);
  }
};

}  // namespace

TEST_SUITE("concurrency") {
  TEST_CASE("concurrency: processes and a multi-threaded host build, load, publish and list the same names at once") {
    const long processes = std::max(2L, setting("KILN_RELIABILITY_PROCESSES", long_run() ? 32 : 12));
    const double seconds = static_cast<double>(setting("KILN_RELIABILITY_SECONDS", long_run() ? 60 : 15));
    const long host_threads = setting("KILN_RELIABILITY_HOST_THREADS", 6);
    const double period = std::max(1.0, seconds / 5);  // a new variant of every recipe this often
    const unsigned seed = static_cast<unsigned>(setting("KILN_RELIABILITY_SEED", std::random_device{}() % 1000000));
    say("concurrency: %ld processes (%ld kiln CLI loops + 1 host of %ld threads) x %.0f s, new recipe variants every %.1f s, "
        "seed %u", processes, processes - 1, host_threads, seconds, period, seed);

    TempDir dir;
    const Workspace ws(dir.path());
    const bool nvrtc = toolchains().nvrtc;
    if (!nvrtc) {
      say("SKIPPED NVRTC builds in the concurrency mix: %s", toolchains().nvrtc_detail.c_str());
      MESSAGE("SKIPPED NVRTC builds: " << toolchains().nvrtc_detail);
    }
    const std::vector<std::string> plugin_builds = {"fake-a", "fake-b"};
    const std::vector<std::string> published = {"pub-a", "pub-b"};
    std::vector<std::string> all_names = {"fake-a", "fake-b", "pub-a", "pub-b"};
    if (nvrtc) all_names.push_back("kern");
    // The long variant also builds with the real nvcc (through tests/data/build/nvcc-wrapper.sh,
    // which logs every call to the same compile log).
    const bool real_nvcc = long_run() && !toolchains().nvcc.empty() && setting("KILN_RELIABILITY_REAL_NVCC", 1) != 0;
    if (real_nvcc) all_names.push_back("nvcc");

    // Every variant's recipe, written before anyone starts; the host gets its own as a plan.
    const int epochs = static_cast<int>(seconds / period) + 1;
    {
      std::ofstream plan((dir / "host-plan.txt").string());
      for (int epoch = 0; epoch <= epochs; ++epoch) {
        for (const auto &name : plugin_builds) {
          plan << epoch << " fake-nvcc " << name << " " << ws.recipe(Backend::fake_nvcc, name, epoch, kConsumer).string() << "\n";
        }
        if (nvrtc) plan << epoch << " nvrtc kern " << ws.recipe(Backend::nvrtc, "kern", epoch, kConsumer).string() << "\n";
        if (real_nvcc) ws.recipe(Backend::real_nvcc, "nvcc", epoch, kConsumer);  // CLI processes only
      }
    }
    const auto env_of = [&](std::map<std::string, std::string> env) {
      env.emplace("KILN_NVCC", (fs::path(KILN_TEST_SOURCE_DIR) / "tests" / "reliability" / "fake-nvcc.sh").string());
      env["KILN_TEST_FAKE_DELAY"] = "0.2";  // compiles overlap: the racers really race
      return env;
    };

    Tally tally;
    const Clock::time_point start = Clock::now();
    const auto deadline = start + std::chrono::duration_cast<Clock::duration>(std::chrono::duration<double>(seconds));
    const auto epoch_now = [&] {
      return static_cast<int>(std::chrono::duration<double>(Clock::now() - start).count() / period);
    };
    // One command, with a watchdog: a kiln process still running after 120 s is a hang.
    const auto run_op = [&](const std::vector<std::string> &argv, const std::map<std::string, std::string> &env) {
      Child child(argv, env, ws.root());
      const double begun = now_seconds();
      while (!child.exited()) {
        if (now_seconds() - begun > 120) {
          child.kill();
          Outcome hung = child.wait();
          hung.err = "hung for 120 s, killed by the test";
          return hung;
        }
        std::this_thread::sleep_for(std::chrono::milliseconds(2));
      }
      return child.wait();
    };

    std::vector<std::thread> workers;
    for (long slot = 0; slot + 1 < processes; ++slot) {
      workers.emplace_back([&, slot] {
        std::mt19937 random(seed * 100 + static_cast<unsigned>(slot));
        while (Clock::now() < deadline) {
          const int pick = static_cast<int>(random() % 20);
          const double begun = now_seconds();
          if (pick < 4) {  // publish a name, flipping it between two entries
            const Op op = ws.publish(published[random() % published.size()], random() % 2 ? "none" : "sm_90", kConsumer);
            const Outcome outcome = run_op(op.argv, env_of(op.env));
            if (!outcome.ok()) tally.fail(op.label + ": " + outcome.describe());
            if (outcome.ok()) tally.named(op.name);
            std::lock_guard<std::mutex> lock(tally.mutex);
            ++tally.ops["publish"];
          } else if (pick < 10) {  // build the current variant, sometimes the one before
            const int which = static_cast<int>(random() % 6);
            const bool kernels = nvrtc && which < 2;
            const bool real = real_nvcc && which == 2;
            const int epoch = std::max(0, epoch_now() - (random() % 5 == 0 ? 1 : 0));
            const Op op = kernels ? ws.build(Backend::nvrtc, "kern", epoch, kConsumer)
                          : real  ? ws.build(Backend::real_nvcc, "nvcc", epoch, kConsumer)
                                  : ws.build(Backend::fake_nvcc, plugin_builds[random() % plugin_builds.size()], epoch, kConsumer);
            const Outcome outcome = run_op(op.argv, env_of(op.env));
            if (!outcome.ok()) {
              tally.fail(op.label + ": " + outcome.describe());
            } else {
              tally.named(op.name);
              try {
                const json out = json::parse(outcome.out);
                std::lock_guard<std::mutex> lock(tally.mutex);
                ++tally.outcomes[out.at("input_key").get<std::string>()][out.at("outcome").get<std::string>()];
                tally.recipe_keys[op.argv.back()].insert(out.at("input_key").get<std::string>());
              } catch (const std::exception &error) {
                tally.fail(op.label + ": --json output does not parse: " + error.what());
              }
            }
            std::lock_guard<std::mutex> lock(tally.mutex);
            ++tally.ops["build"];
          } else if (pick < 17) {  // load (show for device images: no driver needed)
            const std::string name = all_names[random() % all_names.size()];
            const std::string verb = name == "kern" ? "show" : "load";
            const Outcome outcome = run_op(ws.kiln({verb, "--json", kConsumer, name}), env_of(ws.env()));
            if (!outcome.ok()) {
              if (outcome.exit_code == 3 && outcome.signal == 0 && !tally.existed_before(name, begun)) {
                std::lock_guard<std::mutex> lock(tally.mutex);
                ++tally.allowed[verb + ": NotFound before the name's first publish/build finished"];
              } else {
                tally.fail(verb + " " + name + ": " + outcome.describe());
              }
            }
            std::lock_guard<std::mutex> lock(tally.mutex);
            ++tally.ops[verb];
          } else {  // list every consumer
            const Outcome outcome = run_op(ws.kiln({"ls", "--json"}), env_of(ws.env()));
            if (!outcome.ok()) tally.fail("ls: " + outcome.describe());
            if (outcome.ok() && !json::accept(outcome.out)) tally.fail("ls: --json output does not parse");
            std::lock_guard<std::mutex> lock(tally.mutex);
            ++tally.ops["ls"];
          }
        }
      });
    }
    json host;
    Outcome host_outcome;
    workers.emplace_back([&] {
      const long long start_ns = std::chrono::duration_cast<std::chrono::nanoseconds>(start.time_since_epoch()).count();
      host_outcome = run_op({KILN_RELIABILITY_HOST_PATH, ws.store().string(), (dir / "host-plan.txt").string(),
                             std::to_string(host_threads), std::to_string(seconds), std::to_string(seed),
                             std::to_string(start_ns), std::to_string(period)},
                            env_of(ws.env()));
    });
    for (auto &worker : workers) worker.join();
    const double elapsed = std::chrono::duration<double>(Clock::now() - start).count();

    // The host's own figures.
    long host_ops = 0;
    try {
      host = json::parse(host_outcome.out);
      for (const auto &[verb, count] : host.at("ops").items()) host_ops += count.get<long>();
      for (const auto &error : host.at("errors")) tally.unexpected.push_back("host: " + error.get<std::string>());
      for (const auto &[reason, count] : host.at("allowed").items()) tally.allowed["host " + reason] += count.get<long>();
      for (const auto &build : host.at("builds")) {
        ++tally.outcomes[build.at("key").get<std::string>()][build.at("outcome").get<std::string>()];
        tally.recipe_keys[build.at("recipe").get<std::string>()].insert(build.at("key").get<std::string>());
      }
    } catch (const std::exception &error) {
      tally.unexpected.push_back("host: " + host_outcome.describe() + "; output " + host_outcome.out.substr(0, 500) +
                                 " (" + error.what() + ")");
    }
    if (host_outcome.signal != 0 || (host_outcome.exit_code != 0 && host_outcome.exit_code != 1)) {
      tally.unexpected.push_back("host: " + host_outcome.describe());
    }

    // Exactly one compile per input key. The store's bykey/ lists every input key built (each
    // pointer is written once its entry is committed), with the kind of its entry.
    std::map<std::string, std::string> key_kinds;  // input key -> "plugin" / "images"
    const fs::path consumer = ws.store() / "consumers" / kConsumer;
    for (fs::directory_iterator it(consumer / "bykey"), end; it != end; ++it) {
      if (it->path().filename().string()[0] == '.') continue;  // a leftover: check_store reports it
      std::string content_key = kiln::test::read_text(it->path());
      content_key.erase(content_key.find_last_not_of("\n ") + 1);
      try {
        const json meta = json::parse(kiln::test::read_text(consumer / "store" / content_key / "meta.json"));
        key_kinds[it->path().filename().string()] = meta.at("kind").get<std::string>();
      } catch (const std::exception &error) {
        tally.unexpected.push_back("bykey " + it->path().string() + " -> \"" + content_key + "\": " + error.what());
      }
    }
    const CompileLog log = read_compile_log(kiln::test::read_text(ws.compile_log()));
    // A builder that compiled reports "built", or "reused" when it found the entry committed by
    // another builder of the same content meanwhile: every name and variant here compiles to its
    // own content, so "reused" is a second compile of one input key.
    int plugin_keys = 0, image_keys = 0, compiled_twice = 0, image_keys_not_compiled_once = 0;
    for (const auto &[key, kind] : key_kinds) {
      const int compiled = tally.outcomes[key]["built"] + tally.outcomes[key]["reused"];
      if (compiled > 1) {
        ++compiled_twice;
        tally.unexpected.push_back("input key " + key + " (" + kind + ") compiled by " + std::to_string(compiled) + " builders");
      }
      if (kind == "images") {
        ++image_keys;  // NVRTC builds are all reported (the host does not ensure images)
        if (compiled != 1) ++image_keys_not_compiled_once;
      } else {
        ++plugin_keys;  // the host's ensures build too, unreported: the links count those
      }
    }
    for (const auto &[key, outcomes] : tally.outcomes) {
      if (key_kinds.count(key) == 0) tally.unexpected.push_back("input key " + key + " was reported but has no bykey pointer");
    }
    for (const auto &unit : log.repeated()) tally.unexpected.push_back("compiled more than once: " + unit);
    for (const auto &[recipe, keys] : tally.recipe_keys) {
      if (keys.size() > 1) tally.unexpected.push_back(recipe + " built under " + std::to_string(keys.size()) + " input keys");
    }

    long ops = host_ops;
    for (const auto &[verb, count] : tally.ops) ops += count;
    long allowed = 0;
    for (const auto &[reason, count] : tally.allowed) allowed += count;
    say("concurrency: %ld processes x %.1f s: %ld operations (CLI:%s; host %ld in %ld threads), %zu unexpected errors, "
        "%ld allowed", processes, elapsed, ops,
        [&] {
          std::string text;
          for (const auto &[verb, count] : tally.ops) text += " " + verb + " " + std::to_string(count);
          return text;
        }().c_str(),
        host_ops, host_threads, tally.unexpected.size(), allowed);
    for (const auto &[reason, count] : tally.allowed) say("  allowed: %-70s %ld", reason.c_str(), count);
    {
      std::map<std::string, int> totals;
      for (const auto &[key, outcomes] : tally.outcomes) {
        for (const auto &[outcome, count] : outcomes) totals[outcome] += count;
      }
      std::string text;
      for (const auto &[outcome, count] : totals) text += " " + outcome + " " + std::to_string(count);
      say("  build outcomes:%s", text.c_str());
    }
    say("  input keys: %d plugin (stand-in%s nvcc), %d device images (NVRTC); unit compiles %zu, each once: %s; links %d "
        "(one per plugin key: %s); keys compiled by two builders: %d; NVRTC keys not compiled exactly once: %d",
        plugin_keys, real_nvcc ? " and real" : "", image_keys, log.units.size(), log.repeated().empty() ? "yes" : "NO", log.links,
        log.links == plugin_keys ? "yes" : "NO", compiled_twice, image_keys_not_compiled_once);
    for (std::size_t i = 0; i < tally.unexpected.size() && i < 20; ++i) say("  UNEXPECTED %s", tally.unexpected[i].c_str());

    CHECK_MESSAGE(tally.unexpected.empty(), tally.unexpected.size() << " unexpected errors, the first: "
                                                                   << (tally.unexpected.empty() ? "" : tally.unexpected[0]));
    CHECK(log.repeated().empty());
    CHECK(log.links == plugin_keys);
    CHECK(compiled_twice == 0);
    CHECK(image_keys_not_compiled_once == 0);
    CHECK(plugin_keys >= 2);
    CHECK(ops > processes);

    // Nothing was killed: the store is whole and holds no leftover of any kind.
    std::vector<Named> names;
    for (const auto &name : all_names) names.push_back({kConsumer, name});
    const StoreCheck check = check_store(ws, names);
    CHECK_MESSAGE(check.ok(), check.report());
    CHECK_MESSAGE(check.leftover_count() == 0, [&] {
      std::string text;
      for (const auto &[kind, paths] : check.leftovers) {
        for (const auto &path : paths) text += "\n  " + kind + ": " + path;
      }
      return text;
    }());
    CHECK(check.absent == 0);
  }
}
