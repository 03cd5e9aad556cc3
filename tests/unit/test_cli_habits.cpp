// The CLI's habits as people expect them of git, cargo or apt: a mistyped verb or option named
// with the nearest known one (exit 2), `kiln --version --json`, an example and described
// positionals in every verb's --help, the exit codes and environment in `kiln --help`, a bash
// completion script and a man page written from the CLI's own tables.
#include <doctest/doctest.h>

#include <regex>
#include <set>
#include <sstream>

#include <boost/filesystem/operations.hpp>
#include <nlohmann/json.hpp>

#include <kiln/version.hpp>

#include "support/checks.hpp"
#include "support/fixtures.hpp"

using kiln::test::cli_env;
using kiln::test::contains;
using kiln::test::run_kiln;
using kiln::test::run_shell;
using kiln::test::shell_quote;
using kiln::test::TempDir;
using nlohmann::json;
namespace fs = boost::filesystem;

namespace {

// The verbs `kiln --help` lists (CLI11's SUBCOMMANDS section).
std::vector<std::string> listed_verbs() {
  const auto result = run_kiln({"--help"});
  REQUIRE(result.exit_code == 0);
  std::vector<std::string> verbs;
  std::istringstream lines(result.out);
  bool in_list = false;
  for (std::string line; std::getline(lines, line);) {
    if (line == "Subcommands:" || line == "SUBCOMMANDS:") {
      in_list = true;
      continue;
    }
    if (in_list && line.empty()) break;
    if (in_list) verbs.push_back(line.substr(2, line.find(' ', 2) - 2));
  }
  return verbs;
}

// What bash completes after the words, with the completion script `kiln completion bash` wrote.
std::string completed(const fs::path &script, const std::vector<std::string> &words,
                      const std::map<std::string, std::string> &env = {}) {
  std::string array;
  for (const auto &word : words) array += " " + shell_quote(word);
  std::string exports;
  for (const auto &[name, value] : env) exports += "export " + name + "=" + shell_quote(value) + "; ";
  const std::string body = exports + "source " + shell_quote(script.string()) + "; COMP_WORDS=(" + array +
                           "); COMP_CWORD=" + std::to_string(words.size() - 1) +
                           "; _kiln; printf '%s\\n' \"${COMPREPLY[@]}\"";
  const auto result = run_shell("bash -c " + shell_quote(body));
  INFO(result.err);
  CHECK(result.exit_code == 0);
  return result.out;
}

}  // namespace

TEST_CASE("cli habits: a mistyped verb or option is named with the nearest known one, exit 2") {
  TempDir dir;
  const auto env = cli_env(dir / "cache");
  auto result = run_kiln({"lss"}, env);
  CHECK(result.exit_code == 2);
  CHECK(contains(result.err, "unknown verb 'lss'; did you mean 'ls'?"));
  CHECK(result.out.empty());

  result = run_kiln({"-v", "publsh", "--consumer", "c"}, env);
  CHECK(result.exit_code == 2);
  CHECK(contains(result.err, "did you mean 'publish'?"));

  result = run_kiln({"frobnicate"}, env);  // nothing close: no suggestion, the verbs' list named
  CHECK(result.exit_code == 2);
  CHECK(contains(result.err, "unknown verb 'frobnicate'"));
  CHECK_FALSE(contains(result.err, "did you mean"));
  CHECK(contains(result.err, "kiln --help"));

  result = run_kiln({"publish", "--consumer", "c", "--name", "n", "--arhc", "sm_90", "--artifact", "x.so"}, env);
  CHECK(result.exit_code == 2);
  CHECK(contains(result.err, "unknown option '--arhc' for 'kiln publish'; did you mean '--arch'?"));

  result = run_kiln({"publish", "--arhc=sm_90", "--json"}, env);  // --json after the typo: still JSON
  CHECK(result.exit_code == 2);
  const json error = json::parse(result.out)["error"];
  CHECK(error["kind"] == "usage");
  CHECK(error["exit_code"] == 2);
  CHECK(contains(error["message"].get<std::string>(), "did you mean '--arch'?"));

  result = run_kiln({"remote", "pus", "--consumer", "c"}, env);  // a verb's verb
  CHECK(result.exit_code == 2);
  CHECK(contains(result.err, "unknown verb 'remote pus'; did you mean 'remote push'?"));

  result = run_kiln({"gc", "--max-size", "1G", "--dry-rn"}, env);  // an option's value is skipped over
  CHECK(result.exit_code == 2);
  CHECK(contains(result.err, "did you mean '--dry-run'?"));

  result = run_kiln({"ls", "--bogus-option-here"}, env);
  CHECK(result.exit_code == 2);
  CHECK(contains(result.err, "unknown option '--bogus-option-here'"));
  CHECK_FALSE(contains(result.err, "did you mean"));

  // A known verb used wrongly keeps CLI11's own message (not "unknown").
  result = run_kiln({"load", "only-consumer"}, env);
  CHECK(result.exit_code == 2);
  CHECK_FALSE(contains(result.err, "unknown"));
}

TEST_CASE("cli habits: kiln --version prints the version, --version --json what kiln was built with") {
  auto result = run_kiln({"--version"});
  CHECK(result.exit_code == 0);
  CHECK(result.out == std::string("kiln ") + kiln::kVersion + "\n");
  for (const auto &args : std::vector<std::vector<std::string>>{{"--version", "--json"}, {"--json", "--version"}}) {
    result = run_kiln(args);
    REQUIRE_MESSAGE(result.exit_code == 0, result.err);
    const json version = json::parse(result.out);
    CHECK(version["kiln"] == kiln::kVersion);
    CHECK(version["abi"] == std::to_string(KILN_ABI_VERSION_MAJOR) + "." + std::to_string(KILN_ABI_VERSION_MINOR));
    CHECK(version["key_schema"] == kiln::kKeySchema);
    CHECK(version["build"]["cuda_toolkit"].get<int>() >= 11000);
    CHECK_FALSE(version["build"]["type"].get<std::string>().empty());
    CHECK_FALSE(version["build"]["compiler"].get<std::string>().empty());
  }
}

TEST_CASE("cli habits: kiln --help lists the exit codes and every variable docs/cli.md lists") {
  const auto result = run_kiln({"--help"});
  REQUIRE(result.exit_code == 0);
  CHECK(contains(result.out, "Exit codes:"));
  for (int code = 0; code <= 8; ++code) CHECK(contains(result.out, "\n  " + std::to_string(code) + "  "));
  CHECK(contains(result.out, "Environment:"));
  const std::string docs = kiln::test::read_text(fs::path(KILN_TEST_SOURCE_DIR) / "docs" / "cli.md");
  const auto start = docs.find("## Environment");
  REQUIRE(start != std::string::npos);
  const std::string section = docs.substr(start, docs.find("\n## ", start + 1) - start);
  const std::regex variable("KILN_[A-Z_]+[A-Z]");
  std::set<std::string> documented;
  for (std::sregex_iterator it(section.begin(), section.end(), variable), end; it != end; ++it)
    documented.insert(it->str());
  REQUIRE(documented.size() >= 10);
  for (const auto &name : documented) {
    CAPTURE(name);
    CHECK(contains(result.out, "\n  " + name + " "));
  }
}

TEST_CASE("cli habits: every verb's --help has an example and describes its positionals") {
  const auto verbs = listed_verbs();
  REQUIRE(verbs.size() >= 14);
  for (const auto &verb : verbs) {
    CAPTURE(verb);
    const auto result = run_kiln({verb, "--help"});
    CHECK(result.exit_code == 0);
    CHECK(contains(result.out, "Example:\n  kiln " + verb));
  }
  auto result = run_kiln({"load", "--help"});
  CHECK(contains(result.out, "consumer namespace"));
  CHECK(contains(result.out, "artifact name"));
  result = run_kiln({"man"});  // the man page names each option and positional with its description
  REQUIRE(result.exit_code == 0);
  CHECK_FALSE(contains(result.out, "(no description)"));
}

TEST_CASE("cli habits: kiln completion bash completes verbs, each verb's options, and consumers") {
  TempDir dir;
  const auto env = cli_env(dir / "cache");
  auto result = run_kiln({"completion", "bash"});
  REQUIRE_MESSAGE(result.exit_code == 0, result.err);
  const fs::path script = dir / "kiln.bash";
  kiln::test::write_text(script, result.out);
  result = run_shell("bash -c " + shell_quote("source " + shell_quote(script.string()) + " && complete -p kiln"));
  CHECK(result.exit_code == 0);
  CHECK(contains(result.out, "complete -F _kiln kiln"));
  const fs::path built = fs::path(KILN_TEST_BINARY_DIR) / "completions" / "kiln";  // the file installed
  if (fs::exists(built)) {
    CHECK(kiln::test::read_text(built) == kiln::test::read_text(script));
  } else {
    MESSAGE("not compared with the build's completions/kiln: the build wrote none (a cross build)");
  }

  CHECK(completed(script, {"kiln", "pub"}) == "publish\n");
  CHECK(completed(script, {"kiln", "re"}) == "remote\n");
  CHECK(completed(script, {"kiln", "remote", "p"}) == "push\npull\n");
  CHECK_FALSE(contains(completed(script, {"kiln", ""}), "man\n"));  // hidden
  const std::string options = completed(script, {"kiln", "publish", "--consumer", "c", "--ar"});
  CHECK(options == "--artifact\n--arch\n");
  CHECK(contains(completed(script, {"kiln", "-v", "gc", "--"}), "--max-size\n"));

  // Consumers and names from `kiln ls`.
  for (const char *consumer : {"alpha", "beta"}) {
    result = run_kiln({"publish", "--consumer", consumer, "--name", "fma", "--arch", "none", "--artifact",
                       KILN_TEST_PLUGIN_HOST_ONLY},
                      env);
    REQUIRE_MESSAGE(result.exit_code == 0, result.err);
  }
  auto shell_env = env;
  shell_env["PATH"] = fs::path(KILN_CLI_PATH).parent_path().string() + ":/usr/bin:/bin";
  CHECK(completed(script, {"kiln", "load", ""}, shell_env) == "alpha\nbeta\n");
  CHECK(completed(script, {"kiln", "show", "al"}, shell_env) == "alpha\n");
  CHECK(completed(script, {"kiln", "show", "beta", ""}, shell_env) == "fma\n");
}

TEST_CASE("cli habits: kiln man writes a man page that man and groff render without warnings") {
  TempDir dir;
  auto result = run_kiln({"man"});
  REQUIRE_MESSAGE(result.exit_code == 0, result.err);
  const fs::path page = dir / "kiln.1";
  kiln::test::write_text(page, result.out);
  CHECK(contains(result.out, ".TH KILN 1"));
  if (run_shell("command -v groff >/dev/null && command -v man >/dev/null").exit_code != 0) {
    MESSAGE("SKIPPED rendering kiln.1: groff or man is not installed");
    return;
  }
  result = run_shell("groff -ww -man -Tutf8 " + shell_quote(page.string()) + " >/dev/null");
  CHECK(result.exit_code == 0);
  CHECK_MESSAGE(result.err.empty(), result.err);
  result = run_shell("MANWIDTH=80 man -l " + shell_quote(page.string()));
  CHECK(result.exit_code == 0);
  CHECK_MESSAGE(result.err.empty(), result.err);
  CHECK(contains(result.out, "kiln - resolve, check, load and build GPU solver plugins"));
  CHECK(contains(result.out, "EXIT STATUS"));
  CHECK(contains(result.out, "KILN_CACHE_DIR"));
  CHECK(contains(result.out, "kiln publish"));
  CHECK(contains(result.out, "--arch"));
}
