// The trust boundary (docs/architecture.md §9): what decides which code kiln accepts --
// kiln.conf, KILN_REMOTE_TRUST, trusted .pub files -- fails closed, follows one owner/mode rule,
// and no message shows a remote's password. No server is needed: these cases run everywhere.
#include <doctest/doctest.h>

#include <sys/stat.h>
#include <unistd.h>

#include <functional>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include <boost/filesystem/operations.hpp>
#include <nlohmann/json.hpp>

#include <kiln/bundle.hpp>
#include <kiln/errors.hpp>

#include "bundle/keys.hpp"
#include "remote/config.hpp"
#include "support/checks.hpp"
#include "support/fixtures.hpp"
#include "support/preconditions.hpp"

using kiln::test::contains;
using kiln::test::run_kiln;
using kiln::test::ScopedEnv;
using kiln::test::TempDir;
using kiln::test::write_text;
namespace fs = boost::filesystem;
namespace remote = kiln::remote;

namespace {

// The message of the UsageError `call` throws (the case fails when it throws none, or another kind).
std::string usage_message(const std::function<void()> &call) {
  kiln::ErrorKind kind = kiln::ErrorKind::other;
  const std::string message = kiln::test::error_of(call, &kind);
  CHECK_MESSAGE(kind == kiln::ErrorKind::usage, "no UsageError: \"" << message << "\"");
  return message;
}

std::optional<std::string> not_root() {
  if (::geteuid() == 0) return std::nullopt;
  return std::string("giving a file to another user (chown) needs root");
}

// A published plugin, a key pair and the plugin's bundle signed with it.
struct SignedBundle {
  TempDir dir;
  kiln::KeyPair key = kiln::generate_keypair((dir / "vendor").string());
  fs::path bundle = dir / "tests.kbundle";
  std::map<std::string, std::string> env{{"KILN_CACHE_DIR", (dir / "cache").string()}, {"KILN_STORE_PATH", ""}};

  SignedBundle() {
    REQUIRE(run_kiln({"publish", "--consumer", "tests", "--name", "host_only", "--artifact", KILN_TEST_PLUGIN_HOST_ONLY,
                      "--arch", "none"}, env).exit_code == 0);
    REQUIRE(run_kiln({"export", "--consumer", "tests", "-o", bundle.string(), "--sign", key.secret_file}, env).exit_code == 0);
  }
  kiln::test::CommandResult import_trusting(const std::string &pub) const {
    return run_kiln({"import", bundle.string(), "--into", (dir / "into").string(), "--trust", pub, "--json"}, env);
  }
};

}  // namespace

TEST_CASE("trust boundary: KILN_REMOTE_TRUST naming no key file is refused, never an empty trust list") {
  TempDir dir;
  const auto file = dir / "kiln.conf";
  write_text(file, "remote = http://127.0.0.1:1/k\ntrust = /etc/kiln/fleet.pub\n");
  ::chmod(file.c_str(), 0644);
  ScopedEnv remote_env("KILN_REMOTE", std::nullopt);
  for (const std::string value : {":", " ", " : ", "::"}) {
    CAPTURE(value);
    ScopedEnv trust("KILN_REMOTE_TRUST", value);
    const std::string message = usage_message([&] { remote::load_config(file); });
    CHECK(contains(message, "KILN_REMOTE_TRUST"));
    CHECK(contains(message, "names no key file"));
  }
  ScopedEnv trust("KILN_REMOTE_TRUST", std::string("/a.pub: :/b.pub"));
  CHECK(remote::load_config(file).trusted_keys == std::vector<std::string>{"/a.pub", "/b.pub"});
}

TEST_CASE("trust boundary: a KILN_CONFIG naming a missing file is an error; a missing <cache>/kiln.conf is none") {
  TempDir dir;
  ScopedEnv remote_env("KILN_REMOTE", std::nullopt);
  {
    ScopedEnv named("KILN_CONFIG", (dir / "absent.conf").string());
    const auto file = remote::config_file_for(dir / "cache");
    kiln::ErrorKind kind = kiln::ErrorKind::other;
    const std::string message = kiln::test::error_of([&] { remote::load_config(file); }, &kind);
    CHECK(kind == kiln::ErrorKind::not_found);
    CHECK(contains(message, "KILN_CONFIG"));
    CHECK(contains(message, (dir / "absent.conf").string()));
  }
  ScopedEnv unset("KILN_CONFIG", std::nullopt);
  CHECK_FALSE(remote::load_config(remote::config_file_for(dir / "cache")).any());
}

TEST_CASE("trust boundary: relative trust and sign paths in kiln.conf are the config file's neighbours") {
  const auto config = remote::parse_config_text(
      "trust = fleet.pub\ntrust = ../shared/old.pub\ntrust = /abs/one.pub\nsign = keys/build.key\n", "/etc/kiln/kiln.conf");
  CHECK(config.trusted_keys ==
        std::vector<std::string>{"/etc/kiln/fleet.pub", "/etc/shared/old.pub", "/abs/one.pub"});
  CHECK(config.signing_key == "/etc/kiln/keys/build.key");
}

TEST_CASE("trust boundary: a trusted .pub follows kiln.conf's rule: writable by others or a symlink is refused") {
  SignedBundle world;
  const std::string pub = world.key.public_file;
  ::chmod(pub.c_str(), 0666);
  const std::string message = usage_message([&] { kiln::bundle::read_public_key(pub); });
  CHECK(contains(message, pub));
  CHECK(contains(message, "chmod go-w"));
  const auto refused = world.import_trusting(pub);
  CHECK(refused.exit_code == 2);
  CHECK(contains(refused.out, "writable by group or others"));
  CHECK_FALSE(fs::exists(world.dir / "into" / "consumers" / "tests" / "manifest.json"));

  ::chmod(pub.c_str(), 0644);
  fs::create_symlink(pub, world.dir / "link.pub");
  CHECK(contains(usage_message([&] { kiln::bundle::read_public_key((world.dir / "link.pub").string()); }),
                 "symbolic link"));
  const auto imported = world.import_trusting(pub);
  CHECK_MESSAGE(imported.exit_code == 0, imported.err);
}

TEST_CASE("trust boundary: a trusted .pub or kiln.conf owned by another user is refused" * kiln::test::skip_if(not_root)) {
  SignedBundle world;
  const std::string pub = world.key.public_file;
  REQUIRE(::chown(pub.c_str(), 65534, 65534) == 0);
  const auto refused = world.import_trusting(pub);
  CHECK(refused.exit_code == 2);
  CHECK(contains(refused.out, "owned by uid 65534"));
  const auto conf = world.dir / "kiln.conf";
  write_text(conf, "remote = http://127.0.0.1:1/k\n");
  ::chmod(conf.c_str(), 0644);
  REQUIRE(::chown(conf.c_str(), 65534, 65534) == 0);
  ScopedEnv remote_env("KILN_REMOTE", std::nullopt);
  CHECK(contains(usage_message([&] { remote::load_config(conf); }), "owned by uid 65534"));
}

TEST_CASE("trust boundary: no message or --json of a remote configuration shows its password") {
  TempDir dir;
  const std::string password = "S3cret";
  const std::vector<std::string> remotes = {
      "ftp://alice:S3cret@host/kiln",
      "http://alice:S3cret@host/kiln;readonly",
      "http://alice:S3cret@host/kiln;timeout=-1",
      "http://alice:S3cret@host/kiln;max-size=0",
      "http://alice:S3cret@host/kiln;prefix=p",
      "http://alice:S3;cret@host/kiln",
      "http://alice:S3/cret@host/kiln;readonly",
      "http://alice:S3cret@host/kiln?x=1",
      "http://alice:S3cret@/kiln",
      "redis://:S3cret@host:99999/0",
      "redis://:S3cret@host/db",
      "redis://:S3cret%zz@host/0",
      "redis://alice:S3cret@host/0;read-only;colour=blue",
      "http://alice:S3cret@127.0.0.1:1/kiln",  // well-formed: refused connections, reported as down
      "redis://:S3cret@127.0.0.1:1/0",
  };
  const auto shows_password = [&](const std::string &text) {
    return contains(text, password) || contains(text, "cret@") || contains(text, "S3/");
  };
  int runs = 0;
  for (const auto &spec : remotes) {
    CAPTURE(spec);
    const std::map<std::string, std::string> env{{"KILN_CACHE_DIR", (dir / "cache").string()}, {"KILN_REMOTE", spec}};
    for (const bool as_json : {false, true}) {
      auto args = std::vector<std::string>{"remote", "status"};
      if (as_json) args.push_back("--json");
      const auto result = run_kiln(args, env);
      ++runs;
      CAPTURE(result.out);
      CAPTURE(result.err);
      CHECK(result.exit_code != 0);
      CHECK_FALSE(shows_password(result.out));
      CHECK_FALSE(shows_password(result.err));
    }
  }
  // The same lines in kiln.conf, and a line that is not `key = value` at all.
  const auto conf = dir / "kiln.conf";
  for (const std::string &line : {std::string("remote = ftp://alice:S3cret@host/kiln"),
                                  std::string("remote http://alice:S3cret@host/kiln"),
                                  std::string("http://alice:S3cret@host/kiln = 1")}) {
    CAPTURE(line);
    write_text(conf, line + "\n");
    ::chmod(conf.c_str(), 0644);
    const auto result = run_kiln({"remote", "status", "--json"},
                                 {{"KILN_CACHE_DIR", (dir / "cache").string()}, {"KILN_CONFIG", conf.string()}});
    ++runs;
    CAPTURE(result.out);
    CHECK(result.exit_code == 2);
    CHECK(contains(result.out, conf.string()));
    CHECK_FALSE(shows_password(result.out));
    CHECK_FALSE(shows_password(result.err));
  }
  MESSAGE(runs << " error paths checked for the password");
}
