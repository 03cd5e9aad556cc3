#include "reliability/store_check.hpp"

#include <optional>
#include <regex>
#include <set>
#include <sstream>

#include <boost/filesystem/operations.hpp>
#include <nlohmann/json.hpp>

#include <kiln/errors.hpp>
#include <kiln/runtime.hpp>

#include "artifact/identity_json.hpp"
#include "reliability/child.hpp"
#include "store/entry.hpp"
#include "store/layout.hpp"
#include "files/files.hpp"
#include "store/manifest.hpp"
#include "store/names.hpp"

#include "support/checks.hpp"

namespace kiln::reliability {
namespace {

bool starts_with(const std::string &text, const std::string &prefix) { return text.compare(0, prefix.size(), prefix) == 0; }
using kiln::test::contains;

std::vector<fs::path> children(const fs::path &dir) {
  std::vector<fs::path> found;
  boost::system::error_code error;
  for (fs::directory_iterator it(dir, error), end; !error && it != end; it.increment(error)) found.push_back(it->path());
  return found;
}

// The kind of a dot-named leftover, by where it lies (see leftover_kinds()).
std::string leftover_kind(const std::string &parent, const std::string &name) {
  if (parent == "store" && starts_with(name, ".staging-")) return "staging";
  if (parent == "consumer" && starts_with(name, ".manifest.json.tmp-")) return "manifest temp";
  if (parent == "bykey" && contains(name, ".tmp-")) return "bykey temp";
  if (parent == "objects" && contains(name, ".tmp-")) return "object temp";
  if (parent == "root" && starts_with(name, ".toolchain.json.tmp-")) return "toolchain memo temp";
  if (parent == "abi" && starts_with(name, ".staging-")) return "ABI headers staging";
  return "other";
}

class Checker {
 public:
  Checker(const Workspace &ws, StoreCheck &out) : ws_(ws), out_(out) {}

  void problem(const std::string &text) { out_.problems.push_back(text); }
  void leftover(const std::string &parent, const fs::path &path) {
    out_.leftovers[leftover_kind(parent, path.filename().string())].push_back(path.string());
  }

  // A directory of store/: complete and intact, or a problem.
  bool entry_complete(const fs::path &dir) {
    const std::string key = dir.filename().string();
    if (!fs::is_directory(dir) || fs::is_symlink(dir)) {
      problem("store/" + key + " in " + dir.parent_path().string() + " is not an entry directory");
      return false;
    }
    try {
      const store::EntryMeta meta = store::read_entry_meta(dir);
      if (meta.content_key != key) {
        problem("partial entry " + dir.string() + ": meta.json names content key " + meta.content_key);
        return false;
      }
      if (!store::entry_files_intact(dir, meta)) {
        problem("partial entry " + dir.string() + ": a file is missing or differs from its recorded digest");
        return false;
      }
      const fs::path identity = dir / store::kIdentityFile;
      artifact::artifact_identity_from_json(nlohmann::json::parse(files::read_file(identity)), identity.string());
      return true;
    } catch (const std::exception &error) {
      problem("partial entry " + dir.string() + ": " + error.what());
      return false;
    }
  }

  void consumer(const fs::path &dir, std::set<std::string> &named_plugins, std::set<std::string> &named_images) {
    const std::string consumer = dir.filename().string();
    for (const auto &path : children(dir)) {
      if (starts_with(path.filename().string(), ".")) leftover("consumer", path);
    }
    std::set<std::string> complete;
    for (const auto &path : children(dir / "store")) {
      const std::string name = path.filename().string();
      if (starts_with(name, ".")) {
        leftover("store", path);
      } else if (entry_complete(path)) {
        complete.insert(name);
        ++out_.entries;
      }
    }
    for (const auto &path : children(dir / "bykey")) {
      const std::string name = path.filename().string();
      if (starts_with(name, ".")) {
        leftover("bykey", path);
        continue;
      }
      std::string key = test_read(path);
      while (!key.empty() && (key.back() == '\n' || key.back() == ' ')) key.pop_back();
      if (!store::is_valid_key(key)) {
        problem("bykey pointer " + path.string() + " is torn: \"" + key.substr(0, 40) + "\"");
      } else if (complete.count(key) == 0) {
        problem("bykey pointer " + path.string() + " names " + key + ", which is not a complete entry");
      }
    }
    for (const auto &path : children(dir / "objects")) {
      if (starts_with(path.filename().string(), ".")) leftover("objects", path);
    }
    std::optional<store::Manifest> manifest;
    try {
      manifest = store::read_manifest(dir / "manifest.json", consumer);
    } catch (const std::exception &error) {
      problem("manifest of " + consumer + " does not parse: " + error.what());
      return;
    }
    if (!manifest) return;
    for (const auto &[name, record] : manifest->artifacts) {
      ++out_.named;
      if (complete.count(record.content_key) == 0) {
        problem("manifest of " + consumer + " names " + name + " -> " + record.content_key +
                ", which is not a complete entry");
        continue;
      }
      (record.kind == "images" ? named_images : named_plugins).insert(consumer + "/" + name);
    }
  }

  static std::string test_read(const fs::path &file) {
    try {
      return files::read_file(file);
    } catch (const std::exception &error) {
      return std::string("(unreadable: ") + error.what() + ")";
    }
  }

  void run(const std::vector<Named> &expected, bool load_with_cli) {
    const fs::path store_root = ws_.store();
    for (const auto &path : children(store_root)) {
      if (starts_with(path.filename().string(), ".")) leftover("root", path);
    }
    for (const auto &path : children(store_root / "abi")) {
      if (starts_with(path.filename().string(), ".")) leftover("abi", path);
    }
    std::set<std::string> plugins, images;
    for (const auto &dir : children(store_root / "consumers")) consumer(dir, plugins, images);

    // Through the public API, as a host sees it.
    RuntimeOptions options;
    options.cache_dir = store_root.string();
    options.declared_device = "sm_90";
    Runtime runtime(options);
    std::set<std::string> wanted(plugins.begin(), plugins.end());
    wanted.insert(images.begin(), images.end());
    for (const auto &each : expected) wanted.insert(each.consumer + "/" + each.name);
    for (const auto &full : wanted) {
      const std::string consumer = full.substr(0, full.find('/')), name = full.substr(full.find('/') + 1);
      const bool is_named = plugins.count(full) + images.count(full) > 0;
      try {
        const Resolution resolution = runtime.resolve(consumer, name);
        if (!is_named) problem(full + " resolves but its manifest did not name a complete entry");
        if (plugins.count(full) != 0 && load_with_cli) {
          const Outcome load = reliability::run(ws_.kiln({"load", "--json", consumer, name}), ws_.env(), ws_.root());
          if (load.ok()) {
            ++out_.loaded;
          } else {
            problem("kiln load " + full + " failed: " + load.describe());
          }
        }
      } catch (const NotFoundError &) {
        if (is_named) problem(full + " is named but resolve says NotFound");
        ++out_.absent;
      } catch (const std::exception &error) {
        problem("resolve " + full + ": " + error.what());
      }
    }
    const Outcome ls = reliability::run(ws_.kiln({"ls", "--json"}), ws_.env(), ws_.root());
    if (!ls.ok()) problem("kiln ls failed: " + ls.describe());
  }

 private:
  const Workspace &ws_;
  StoreCheck &out_;
};

}  // namespace

const std::vector<LeftoverKind> &leftover_kinds() {
  // The next writer sweeps a staging directory whose lock (.staging.lock inside) a dead writer
  // held at once. A writer killed in the microseconds before its lock file appeared, or after
  // commit removed it, leaves a lock-less directory; those, and the temps of killed writers,
  // are swept only once untouched for a bound (src/store/sweep.hpp: a live writer cannot be
  // told from a dead one sooner), so the next command seconds later may still see them: they
  // are counted here, and tests/unit/test_leftovers.cpp proves their sweep past the bound.
  static const std::vector<LeftoverKind> kinds = {
      {"staging", "<consumer>/store/.staging-v2-* holding its lock file", true},
      {"manifest temp", "<consumer>/.manifest.json.tmp-*", false},
      {"bykey temp", "<consumer>/bykey/.<input key>.tmp-*", false},
      {"object temp", "<consumer>/objects/.<unit>.tmp-*", false},
      {"toolchain memo temp", "<store>/.toolchain.json.tmp-*", false},
      {"ABI headers staging", "<store>/abi/.staging-* (a copy of the ABI headers being written)", false},
      {"other", "any other dot-named file", false},
  };
  return kinds;
}

std::string StoreCheck::report() const {
  std::string text;
  for (const auto &each : problems) text += "  " + each + "\n";
  return text;
}

int StoreCheck::leftover_count() const {
  int count = 0;
  for (const auto &[kind, paths] : leftovers) count += static_cast<int>(paths.size());
  return count;
}

StoreCheck check_store(const Workspace &ws, const std::vector<Named> &expected, bool load_with_cli) {
  StoreCheck check;
  Checker(ws, check).run(expected, load_with_cli);
  return check;
}

std::vector<std::string> unswept(const StoreCheck &check) {
  std::vector<std::string> problems;
  for (const auto &kind : leftover_kinds()) {
    if (!kind.swept) continue;
    const auto found = check.leftovers.find(kind.kind);
    if (found == check.leftovers.end()) continue;
    for (const auto &path : found->second) {
      const bool lockless = std::string(kind.kind) == "staging" &&
                            !boost::filesystem::exists(boost::filesystem::path(path) / kiln::store::kStagingLockFile);
      if (!lockless) problems.push_back("leftover " + std::string(kind.kind) + " not swept: " + path);
    }
  }
  return problems;
}

CompileLog read_compile_log(const std::string &text) {
  CompileLog log;
  std::istringstream lines(text);
  for (std::string line; std::getline(lines, line);) {
    if (starts_with(line, "--version")) {
      ++log.probes;
    } else if (starts_with(line, "--shared")) {
      ++log.links;
    } else if (starts_with(line, "-c ")) {
      // The output path and the generated headers' directory (-I<staging>/gen) name the
      // builder's staging directory: what is left is the unit's command.
      static const std::regex staging(R"(\.staging-[^/ ]*)");
      std::istringstream words(std::regex_replace(line, staging, ".staging-*"));
      std::string unit, word;
      bool skip = false;
      while (words >> word) {
        if (skip) {
          skip = false;
        } else if (word == "-o") {
          skip = true;
        } else {
          unit += word + " ";
        }
      }
      ++log.units[unit];
    }
  }
  return log;
}

std::vector<std::string> CompileLog::repeated() const {
  std::vector<std::string> found;
  for (const auto &[unit, count] : units) {
    if (count > 1) found.push_back(std::to_string(count) + " compiles of: " + unit);
  }
  return found;
}

}  // namespace kiln::reliability
