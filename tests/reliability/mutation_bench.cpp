#include "reliability/mutation_bench.hpp"

#include <set>

#include <boost/filesystem/operations.hpp>
#include <doctest/doctest.h>
#include <nlohmann/json.hpp>

namespace kiln::reliability::mutation {
namespace {

const fs::path kFixtures = fs::path(KILN_TEST_SOURCE_DIR) / "tests" / "reliability" / "mutation";

// The "kiln-mutation ...;" marker a plugin carries (mutation/plugin/plugin.cu), or "" when absent.
std::string marker_of(const fs::path &artifact) {
  const std::string bytes = test::read_text(artifact);
  const auto at = bytes.find("kiln-mutation ");
  if (at == std::string::npos) return "";
  const auto end = bytes.find(';', at);
  return end == std::string::npos ? "" : bytes.substr(at, end - at);
}

Built parse_report(const std::string &out, bool with_artifact) {
  const auto report = nlohmann::json::parse(out);
  Built built;
  built.ok = true;
  built.outcome = report["outcome"];
  built.input_key = report["input_key"];
  built.content_key = report["content_key"];
  if (report["remote"].is_string()) built.remote = report["remote"];
  if (report["signed_by"].is_string()) built.signed_by = report["signed_by"];
  for (const auto &upload : report["uploads"]) built.uploads[upload["remote"]] = upload["status"];
  if (with_artifact && report.contains("entry")) {
    for (fs::directory_iterator it(report["entry"].get<std::string>()), end; it != end; ++it) {
      if (it->path().extension() == ".so") built.artifact = it->path().string();
    }
  }
  return built;
}

}  // namespace

void edit(const fs::path &file, const std::string &from, const std::string &to) {
  std::string text = test::read_text(file);
  const auto at = text.find(from);
  REQUIRE_MESSAGE(at != std::string::npos, file.string() << " has no \"" << from << "\"");
  text.replace(at, from.size(), to);
  test::write_text(file, text);
}

void write_script(const fs::path &file, const std::string &body) {
  test::write_text(file, "#!/bin/sh\n" + body);
  fs::permissions(file, fs::owner_all | fs::group_read | fs::group_exe | fs::others_read | fs::others_exe);
}

Bench::Bench(std::string backend, const std::string &fixture, const std::string &recipe, std::vector<Remote> remotes)
    : backend_(std::move(backend)), recipe_name_(recipe), remotes_(std::move(remotes)) {
  dir_ = tmp_.path() / "checkout";
  test::copy_tree(kFixtures / fixture, dir_);
  env_ = test::cli_env(tmp_.path() / "cache");
  env_["KILN_JOBS"] = "2";
  if (local()) {
    tallies_[""] = {};
    return;
  }
  for (const Remote &remote : remotes_) tallies_[remote.name] = {};
  // The fleet's key: uploads are signed with it and every machine trusts only it, so that each
  // fetched entry is verified.
  const auto keygen = test::run_kiln({"keygen", "-o", (tmp_.path() / "fleet").string(), "--json"}, env_);
  REQUIRE_MESSAGE(keygen.exit_code == 0, keygen.err);
  key_id_ = nlohmann::json::parse(keygen.out)["key_id"];
  signing_key_ = tmp_.path() / "fleet.key";
  trusted_key_ = tmp_.path() / "fleet.pub";
}

Built Bench::run(const std::vector<std::string> &verb, const Env &machine, const Env &extra,
                 const std::vector<std::string> &args, test::CommandResult *ran) const {
  std::vector<std::string> argv = verb;
  argv.push_back("--json");
  argv.push_back((dir_ / recipe_name_).string());
  argv.insert(argv.end(), args.begin(), args.end());
  Env env = env_;
  for (const auto &[name, value] : machine) env[name] = value;
  for (const auto &[name, value] : extra) env[name] = value;
  const auto result = test::run_kiln(argv, env);
  if (ran != nullptr) *ran = result;
  if (result.exit_code != 0) {
    if (ran == nullptr)
      FAIL_CHECK(backend_ << ": kiln " << verb.back() << " exited " << result.exit_code << ": " << result.err);
    return {};
  }
  return parse_report(result.out, !marker.empty());
}

Env Bench::machine(const std::vector<Remote> &remotes, bool writes) {
  std::string specs;
  for (const Remote &remote : remotes) specs += (specs.empty() ? "" : "|") + remote.spec + (writes ? "" : ";read-only");
  return {{"KILN_CACHE_DIR", (tmp_.path() / "machines" / std::to_string(++machines_)).string()},
          {"KILN_REMOTE", specs},
          {"KILN_REMOTE_TRUST", trusted_key_.string()},
          {"KILN_REMOTE_SIGN", writes ? signing_key_.string() : ""}};
}

Bench::Pulled Bench::pull(const Remote &remote, const std::string &what, const Env &extra,
                          const std::vector<std::string> &args) {
  test::CommandResult ran;
  Pulled pulled;
  pulled.built = run({"remote", "pull"}, machine({remote}, false), extra, args, &ran);
  pulled.served = ran.exit_code == 0;
  CHECK_MESSAGE((ran.exit_code == 0 || ran.exit_code == 3),
                label(remote) << ": " << what << ": kiln remote pull exited " << ran.exit_code << ": " << ran.err);
  // A remote that fails is skipped and the lookup goes on without it (exit 3 as for a miss,
  // src/remote/cache.cpp): one that did not answer missed nothing.
  const bool failed = ran.err.find("proceeds without it") != std::string::npos;
  CHECK_MESSAGE(!failed, label(remote) << ": " << what << ": the remote did not answer: " << ran.err);
  pulled.answered = !failed && (ran.exit_code == 0 || ran.exit_code == 3);
  return pulled;
}

const Remote *Bench::remote_of(const std::string &url) const {
  for (const Remote &remote : remotes_) {
    if (!url.empty() && remote.spec.rfind(url, 0) == 0) return &remote;
  }
  return nullptr;
}

void Bench::baseline(const Env &extra) {
  last_ = local() ? run({"build"}, {}, extra, {}) : run({"build"}, machine(remotes_, true), extra, {});
  REQUIRE(last_.ok);
  CHECK(last_.outcome == "built");
  check_marker("baseline", last_);
  if (!local()) check_uploaded("baseline", last_);
}

void Bench::must_miss(const std::string &what, const Env &extra, const std::vector<std::string> &args) {
  if (local()) {
    Tally &tally = tallies_[""];
    ++tally.mutations;
    const Built now = run({"build"}, {}, extra, args);
    if (!now.ok) return;
    const bool miss = now.outcome == "built";
    (miss ? tally.misses : tally.hits) += 1;
    if (!miss) ++tally.wrong_hits;
    CHECK_MESSAGE(miss, backend_ << ": " << what << ": outcome " << now.outcome
                                 << " where a rebuild was required (a wrong hit: kiln does not key this input)");
    CHECK_MESSAGE(now.content_key != last_.content_key,
                  backend_ << ": " << what << ": the content key stayed " << now.content_key);
    check_marker(what, now);
    last_ = now;
    return;
  }
  // Each remote alone, by input key, before anything of the new inputs is uploaded.
  std::set<std::string> served, unanswered;
  for (const Remote &remote : remotes_) {
    const Pulled pulled = pull(remote, what, extra, args);
    if (!pulled.answered) unanswered.insert(remote.name);
    if (!pulled.served) continue;
    served.insert(remote.name);
    FAIL_CHECK(label(remote) << ": " << what << ": an empty cache was served " << pulled.built.content_key
                             << " (uploaded for other inputs) where a rebuild was required (a wrong hit)");
  }
  // Then a build against all of them: a compile, and every remote's content-key lookup a miss.
  const Built now = run({"build"}, machine(remotes_, true), extra, args);
  if (now.ok) {
    if (now.outcome == "fetched") {
      const Remote *from = remote_of(now.remote);
      served.insert(from != nullptr ? from->name : now.remote);
    }
    CHECK_MESSAGE(now.outcome == "built", backend_ << ": " << what << ": outcome " << now.outcome << " (from "
                                                   << now.remote << ") where a rebuild was required (a wrong hit)");
    CHECK_MESSAGE(now.content_key != last_.content_key,
                  backend_ << ": " << what << ": the content key stayed " << now.content_key);
    check_marker(what, now);
    check_uploaded(what, now);
    last_ = now;
  }
  for (const Remote &remote : remotes_) {
    Tally &tally = tallies_[remote.name];
    ++tally.mutations;
    if (served.count(remote.name) != 0) {
      ++tally.hits;
      ++tally.wrong_hits;
    } else if (now.ok && unanswered.count(remote.name) == 0) {
      ++tally.misses;
    }
  }
}

void Bench::must_hit(const std::string &what, const Env &extra, const std::vector<std::string> &args) {
  if (local()) {
    Tally &tally = tallies_[""];
    ++tally.mutations;
    const Built now = run({"build"}, {}, extra, args);
    if (!now.ok) return;
    (now.outcome == "hit" ? tally.hits : tally.misses) += 1;
    CHECK_MESSAGE(now.outcome == "hit",
                  backend_ << ": " << what << ": outcome " << now.outcome << " where a hit was due");
    CHECK_MESSAGE(now.content_key == last_.content_key, backend_ << ": " << what << ": another content key");
    check_marker(what, now);
    last_ = now;
    return;
  }
  for (const Remote &remote : remotes_) {
    Tally &tally = tallies_[remote.name];
    ++tally.mutations;
    const Pulled pulled = pull(remote, what, extra, args);
    if (!pulled.answered) continue;
    (pulled.served ? tally.hits : tally.misses) += 1;
    CHECK_MESSAGE(pulled.served, label(remote) << ": " << what << ": the remote held nothing for these inputs "
                                               << "where a remote hit was due");
    if (pulled.served) check_served(remote, what, pulled.built, last_);
  }
}

void Bench::back_to(const std::string &what, const Built &state, const Env &extra) {
  if (local()) {
    const Built now = run({"build"}, {}, extra, {});
    if (!now.ok) return;
    CHECK_MESSAGE(now.outcome == "hit", backend_ << ": back to " << what << ": outcome " << now.outcome);
    CHECK_MESSAGE(now.content_key == state.content_key, backend_ << ": back to " << what << ": another content key");
    last_ = now;
    return;
  }
  for (const Remote &remote : remotes_) {
    const Pulled pulled = pull(remote, "back to " + what, extra, {});
    CHECK_MESSAGE(pulled.served, label(remote) << ": back to " << what << ": the remote held nothing for these inputs");
    if (pulled.served) check_served(remote, "back to " + what, pulled.built, state);
  }
  last_ = state;
}

void Bench::env_must_miss(const std::string &what, const Env &set, const std::string &field, const std::string &value,
                          const Built &before) {
  const std::string previous = marker.empty() ? "" : marker.at(field);
  if (!marker.empty()) marker[field] = value;
  must_miss(what, set);
  if (!marker.empty()) marker[field] = previous;
  back_to("without " + what, before);
}

void Bench::relocate(const std::string &name) {
  const fs::path moved = tmp_.path() / name;
  fs::rename(dir_, moved);
  dir_ = moved;
}

void Bench::summary() const {
  const auto say = [&](const std::string &who, const Tally &tally) {
    MESSAGE("mutation " << who << ": " << tally.mutations << " mutations, " << tally.misses << " misses, " << tally.hits
                        << " hits, " << tally.wrong_hits << " wrong hits");
  };
  if (local()) say(backend_, tallies_.at(""));
  for (const Remote &remote : remotes_) say(label(remote), tallies_.at(remote.name));
}

void Bench::check_served(const Remote &remote, const std::string &what, const Built &pulled, const Built &state) const {
  const std::string who = label(remote) + ": " + what;
  CHECK_MESSAGE(pulled.outcome == "fetched", who << ": outcome " << pulled.outcome);
  CHECK_MESSAGE(remote_of(pulled.remote) == &remote, who << ": fetched from " << pulled.remote);
  CHECK_MESSAGE(pulled.signed_by == key_id_, who << ": signed by \"" << pulled.signed_by << "\", not the fleet's key");
  CHECK_MESSAGE(pulled.input_key == state.input_key, who << ": another input key");
  CHECK_MESSAGE(pulled.content_key == state.content_key, who << ": another content key " << pulled.content_key);
  check_marker(what, pulled);
}

void Bench::check_uploaded(const std::string &what, const Built &built) const {
  for (const Remote &remote : remotes_) {
    std::string status = "not offered";
    for (const auto &[url, said] : built.uploads) {
      if (remote_of(url) == &remote) status = said;
    }
    CHECK_MESSAGE(status == "uploaded", label(remote) << ": " << what << ": upload " << status);
  }
}

void Bench::check_marker(const std::string &what, const Built &built) const {
  if (marker.empty() || !built.ok) return;
  std::string expected = "kiln-mutation";
  for (const auto &field : {"host", "header", "define", "flag", "env", "cpath"})
    expected += std::string(" ") + field + "=" + marker.at(field);
  CHECK_MESSAGE(marker_of(built.artifact) == expected,
                backend_ << ": " << what << ": the artifact kiln returned was built from other inputs");
}

}  // namespace kiln::reliability::mutation
