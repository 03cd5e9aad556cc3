// The remote caches' configuration (kiln/remote.hpp): KILN_REMOTE and kiln.conf, and what a
// malformed one says. No server is needed: these cases run everywhere.
#include <doctest/doctest.h>

#include <sys/stat.h>

#include <kiln/errors.hpp>
#include <kiln/remote.hpp>
#include <kiln/runtime.hpp>
#include <kiln/store.hpp>

#include "remote/config.hpp"
#include "remote/schemes.hpp"
#include "support/fixtures.hpp"
#include "support/plugin_store.hpp"

using namespace kiln;
using kiln::remote::load_config;
using kiln::remote::parse_config_text;
using kiln::remote::parse_remote;
using kiln::test::ScopedEnv;
using kiln::test::TempDir;
using kiln::test::write_text;

namespace {

// The message of the UsageError a call throws (the case fails when it throws none).
std::string remote_usage_message(const std::function<void()> &call) { return kiln::test::error_of<UsageError>(call); }

// `text` as the kiln.conf `file`, 0644 whatever the umask: load_config refuses one others can write.
void write_config(const boost::filesystem::path &file, const std::string &text) {
  write_text(file, text);
  ::chmod(file.c_str(), 0644);
}

}  // namespace

TEST_CASE("remote config: a remote's URL and attributes") {
  const auto endpoint = parse_remote("http://build1:8080/kiln; read-only ;connect-timeout=0.25;timeout=3;max-size=64M", "test");
  CHECK(endpoint.url == "http://build1:8080/kiln");
  CHECK(endpoint.read_only);
  CHECK(endpoint.connect_timeout_s == doctest::Approx(0.25));
  CHECK(endpoint.timeout_s == doctest::Approx(3));
  CHECK(endpoint.max_bytes == 64ull << 20);
  CHECK(endpoint.writes == kiln::remote::Endpoint::Writes::never);
  const auto redis = parse_remote("redis://cache:6379/2;prefix=fleet:", "test");
  CHECK(redis.read_only);  // until load_config decides: written only where a signing key is configured
  CHECK(redis.writes == kiln::remote::Endpoint::Writes::unsaid);
  CHECK(redis.attribute("prefix", "kiln:") == "fleet:");

  const std::string ftp = remote_usage_message([] { parse_remote("ftp://host/kiln", "KILN_REMOTE"); });
  CHECK(ftp.find("KILN_REMOTE: remote \"ftp://host/kiln\" is not a URL kiln can use: give http://host[:port]/prefix, "
                 "https://host[:port]/prefix or redis://[:password@]host[:port][/db]") == 0);
  CHECK(remote_usage_message([] { parse_remote("http://h/k;timeout=-1", "x"); }).find("timeout \"-1\" is not a number of seconds") != std::string::npos);
  CHECK(remote_usage_message([] { parse_remote("http://h/k;timeout=1e400", "x"); }).find("is not a number of seconds") != std::string::npos);
  CHECK(remote_usage_message([] { parse_remote("http://h/k;max-size=0", "x"); }).find("max-size \"0\"") != std::string::npos);
  CHECK(remote_usage_message([] { parse_remote("http://h/k;prefix=p", "x"); }).find("unknown attribute \"prefix=p\"") != std::string::npos);
  CHECK(remote_usage_message([] { parse_remote("http://h/k;readonly", "x"); }).find("known: read-only") != std::string::npos);
}

TEST_CASE("remote config: one scheme table serves the checks, the attributes and the capabilities") {
  // Schemes compare without case, as URLs' do, in the configuration and in the dispatch alike.
  CHECK(parse_remote("HTTPS://build1/kiln", "test").url == "HTTPS://build1/kiln");
  const kiln::remote::Scheme *https = kiln::remote::find_scheme("HTTPS://build1/kiln");
  REQUIRE(https != nullptr);
  CHECK(https->name == "https");
  CHECK(https->family == kiln::remote::BackendFamily::http);
  CHECK(kiln::remote::find_scheme("ftp://host/kiln") == nullptr);
  CHECK(kiln::remote::find_scheme("http:/host") == nullptr);
  CHECK(kiln::remote::find_scheme("httpx://host") == nullptr);
  // A scheme's own attribute belongs to it alone, and the refusal says which attributes it has.
  const kiln::remote::Scheme *redis = kiln::remote::find_scheme("redis://cache:6379");
  REQUIRE(redis != nullptr);
  CHECK(kiln::remote::has_attribute(*redis, "prefix"));
  CHECK_FALSE(kiln::remote::has_attribute(*redis, "pre"));
  CHECK_FALSE(kiln::remote::has_attribute(*https, "prefix"));
  const std::string refused = remote_usage_message([] { parse_remote("redis://cache;bucket=b", "x"); });
  CHECK(refused.find("unknown attribute \"bucket=b\"") != std::string::npos);
  CHECK(refused.find("and for redis: prefix=VALUE") != std::string::npos);
  CHECK(parse_remote("http://h/k", "x").attribute("prefix", "kiln:") == "kiln:");  // the backend's default
  for (const auto &scheme : kiln::remote::kSchemes) CHECK_MESSAGE(scheme.leases, scheme.name);
}

TEST_CASE("remote config: kiln.conf lines, named by file and line when wrong") {
  const auto config = parse_config_text(
      "# the fleet\nremote = http://a:1/k\n\nremote = redis://b:2/0 ; read-only # the shared one\n"
      "trust = /etc/kiln/one.pub\ntrust = /etc/kiln/two.pub\nsign = /k/build.key\nlease_wait = 30\nretry_after=5\n",
      "/c/kiln.conf");
  REQUIRE(config.remotes.size() == 2);
  CHECK(config.remotes[1].url == "redis://b:2/0");
  CHECK(config.remotes[1].read_only);
  CHECK(config.trusted_keys == std::vector<std::string>{"/etc/kiln/one.pub", "/etc/kiln/two.pub"});
  CHECK(config.signing_key == "/k/build.key");
  CHECK(config.lease_wait_s == doctest::Approx(30));
  CHECK(config.retry_after_s == doctest::Approx(5));

  CHECK(remote_usage_message([] { parse_config_text("remote = http://a/k\nremotes = x\n", "/c/kiln.conf"); })
            .find("/c/kiln.conf:2: unknown setting \"remotes\"") == 0);
  CHECK(remote_usage_message([] { parse_config_text("remote\n", "/c/kiln.conf"); }).find("/c/kiln.conf:1: \"remote\" is not `key = value`") == 0);
  CHECK(remote_usage_message([] { parse_config_text("trust =\n", "f"); }).find("f:1: trust has no value") == 0);
  CHECK(remote_usage_message([] { parse_config_text("remote = gopher://x\n", "f"); }).find("f:1: remote") == 0);
}

TEST_CASE("remote config: the environment replaces the file's setting; off turns remotes off") {
  TempDir dir;
  const auto file = dir / "kiln.conf";
  write_config(file, "remote = http://file:1/k\ntrust = /file.pub\n");
  {
    ScopedEnv remote("KILN_REMOTE", std::nullopt), trust("KILN_REMOTE_TRUST", std::nullopt), sign("KILN_REMOTE_SIGN", std::nullopt);
    const auto config = load_config(file);
    CHECK(config.config_file == file.string());
    REQUIRE(config.remotes.size() == 1);
    CHECK(config.remotes[0].url == "http://file:1/k");
  }
  {
    ScopedEnv remote("KILN_REMOTE", std::string("http://env:1/k;read-only | redis://env:2/0"));
    ScopedEnv trust("KILN_REMOTE_TRUST", std::string("/a.pub:/b.pub"));
    const auto config = load_config(file);
    REQUIRE(config.remotes.size() == 2);
    CHECK(config.remotes[0].url == "http://env:1/k");
    CHECK(config.remotes[0].read_only);
    CHECK(config.remotes[1].url == "redis://env:2/0");
    CHECK(config.trusted_keys == std::vector<std::string>{"/a.pub", "/b.pub"});
  }
  {
    ScopedEnv remote("KILN_REMOTE", std::string("off"));
    CHECK_FALSE(load_config(file).any());
  }
  ScopedEnv remote("KILN_REMOTE", std::nullopt);
  CHECK_FALSE(load_config(dir / "absent.conf").any());
}

TEST_CASE("remote config: a kiln.conf others can write is refused (it names the keys trusted to sign code)") {
  TempDir dir;
  ScopedEnv remote("KILN_REMOTE", std::nullopt);
  const auto file = dir / "kiln.conf";
  write_text(file, "remote = http://a:1/k\n");
  ::chmod(file.c_str(), 0666);
  const std::string message = remote_usage_message([&] { load_config(file); });
  CHECK(message.find(file.string()) != std::string::npos);
  CHECK(message.find("chmod go-w") != std::string::npos);
}

TEST_CASE("remote config: loads never read it; a build or remote status reports a malformed one") {
  TempDir dir;
  ScopedEnv remote("KILN_REMOTE", std::string("http://h:1/k;colour=blue"));
  RuntimeOptions options;
  options.cache_dir = (dir / "cache").string();
  options.declared_device = "sm_90";
  Runtime runtime(options);  // constructing reads no remote setting
  CHECK(runtime.list("nobody").empty());
  CHECK_THROWS_AS(runtime.remote_status(), UsageError);
}

TEST_CASE("remote config: without the backends' module, a build that would use a remote says where it looked") {
  TempDir dir;
  const auto result = kiln::test::run_kiln({"remote", "status"}, {{"KILN_CACHE_DIR", (dir / "cache").string()},
                                                                  {"KILN_REMOTE", "http://127.0.0.1:1/kiln"},
                                                                  {"KILN_REMOTE_MODULE", (dir / "absent.so").string()}});
  CHECK(result.exit_code == 2);
  CHECK(result.err.find("libkiln-remote.so is not installed (looked in: " + (dir / "absent.so").string() + ")") !=
        std::string::npos);
  CHECK(result.err.find("install the kiln-remote package") != std::string::npos);
  CHECK(result.err.find("KILN_REMOTE=off") != std::string::npos);
  // A load never needs it: no remote is asked for a plugin that is there, or absent.
  const auto listed = kiln::test::run_kiln({"ls"}, {{"KILN_CACHE_DIR", (dir / "cache").string()},
                                                    {"KILN_REMOTE", "http://127.0.0.1:1/kiln"},
                                                    {"KILN_REMOTE_MODULE", (dir / "absent.so").string()}});
  CHECK(listed.exit_code == 0);
}

TEST_CASE("remote config: a remote is written where its spec says read-write, or by a machine that signs") {
  TempDir dir;
  const auto file = dir / "kiln.conf";
  ScopedEnv remote("KILN_REMOTE", std::nullopt), trust("KILN_REMOTE_TRUST", std::nullopt),
      sign("KILN_REMOTE_SIGN", std::nullopt), accept("KILN_REMOTE_ACCEPT_UNSIGNED", std::nullopt);
  // Each remote's read_only, in order, as load_config decides it from `text` and the environment.
  const auto read_only_of = [&](const std::string &text) {
    write_config(file, text);
    std::vector<bool> read_only;
    for (const auto &endpoint : load_config(file).remotes) read_only.push_back(endpoint.read_only);
    return read_only;
  };
  const std::string specs =
      "remote = http://a:1/k\nremote = http://b:1/k;read-write\nremote = redis://c:2/0 ; read-only\n";
  // No signing key: only the remote that says read-write is written.
  CHECK(read_only_of(specs) == std::vector<bool>{true, false, true});
  // A signing key, in kiln.conf or the environment: every remote but the one that says read-only.
  CHECK(read_only_of(specs + "sign = /k/build.key\n") == std::vector<bool>{false, false, true});
  {
    ScopedEnv env_sign("KILN_REMOTE_SIGN", std::string("/k/build.key"));
    CHECK(read_only_of(specs) == std::vector<bool>{false, false, true});
  }
  // KILN_REMOTE's remotes are decided the same way.
  {
    ScopedEnv env_remote("KILN_REMOTE", std::string("http://e:1/k|http://f:1/k;read-write|http://g:1/k;read-only"));
    CHECK(read_only_of("") == std::vector<bool>{true, false, true});
    ScopedEnv env_sign("KILN_REMOTE_SIGN", std::string("/k/build.key"));
    CHECK(read_only_of("") == std::vector<bool>{false, false, true});
  }
  // A spec saying the same twice says it once; saying both is refused, naming the remote and
  // where it was written, never its password.
  CHECK(parse_remote("http://h:1/k;read-write;read-write", "x").writes == kiln::remote::Endpoint::Writes::always);
  const std::string both =
      remote_usage_message([] { parse_remote("redis://:S3cret@h:1/0;read-only;read-write", "KILN_REMOTE"); });
  CHECK(both.find("KILN_REMOTE: remote") == 0);
  CHECK(both.find("h:1/0") != std::string::npos);
  CHECK(both.find("both read-only and read-write") != std::string::npos);
  CHECK(both.find("S3cret") == std::string::npos);
  const std::string in_file = remote_usage_message([] {
    parse_config_text("remote = http://a:1/k\nremote = http://b:1/k;read-write ; read-only\n", "/c/kiln.conf");
  });
  CHECK(in_file.find("/c/kiln.conf:2: remote") == 0);
  CHECK(in_file.find("http://b:1/k") != std::string::npos);
  CHECK(in_file.find("both read-only and read-write") != std::string::npos);
  // The attribute takes no value.
  CHECK(remote_usage_message([] {
          parse_remote("http://h/k;read-write=yes", "x");
        }).find("unknown attribute \"read-write=yes\"") != std::string::npos);
}

TEST_CASE("remote config: accept-unsigned in kiln.conf and KILN_REMOTE_ACCEPT_UNSIGNED, yes or no") {
  CHECK_FALSE(parse_config_text("remote = http://a:1/k\n", "f").accept_unsigned);  // off unless said
  for (const std::string yes : {"yes", "1", "true"}) {
    CHECK_MESSAGE(parse_config_text("accept-unsigned = " + yes + "\n", "f").accept_unsigned, yes);
  }
  for (const std::string no : {"no", "0", "false"}) {
    CHECK_FALSE_MESSAGE(parse_config_text("accept-unsigned = " + no + "\n", "f").accept_unsigned, no);
  }
  const std::string bad =
      remote_usage_message([] { parse_config_text("\naccept-unsigned = maybe\n", "/c/kiln.conf"); });
  CHECK(bad.find("/c/kiln.conf:2: accept-unsigned \"maybe\" is neither yes nor no") == 0);
  CHECK(remote_usage_message([] {
          parse_config_text("accept_unsigned = yes\n", "f");
        }).find("known: remote, trust, sign, accept-unsigned") != std::string::npos);

  TempDir dir;
  const auto file = dir / "kiln.conf";
  write_config(file, "remote = http://a:1/k\naccept-unsigned = yes\n");
  ScopedEnv remote("KILN_REMOTE", std::nullopt);
  {
    ScopedEnv accept("KILN_REMOTE_ACCEPT_UNSIGNED", std::nullopt);
    CHECK(load_config(file).accept_unsigned);
    CHECK_FALSE(load_config(dir / "absent.conf").accept_unsigned);
  }
  // The environment replaces the file's setting, either way.
  {
    ScopedEnv accept("KILN_REMOTE_ACCEPT_UNSIGNED", std::string("no"));
    CHECK_FALSE(load_config(file).accept_unsigned);
  }
  {
    ScopedEnv accept("KILN_REMOTE_ACCEPT_UNSIGNED", std::string("1"));
    CHECK(load_config(dir / "absent.conf").accept_unsigned);
  }
  {
    ScopedEnv accept("KILN_REMOTE_ACCEPT_UNSIGNED", std::string("Yes please"));
    const std::string message = remote_usage_message([&] { load_config(file); });
    CHECK(message.find("KILN_REMOTE_ACCEPT_UNSIGNED") == 0);
    CHECK(message.find("is neither yes nor no") != std::string::npos);
  }
}

TEST_CASE("remote config: entry-lifetime in kiln.conf and KILN_REMOTE_ENTRY_LIFETIME, an hour or more") {
  CHECK(parse_config_text("remote = http://a:1/k\n", "f").entry_lifetime_s == 90LL * 86400);  // the default
  CHECK(parse_config_text("entry-lifetime = 30d\n", "f").entry_lifetime_s == 30LL * 86400);
  CHECK(parse_config_text("entry-lifetime = 720h\n", "f").entry_lifetime_s == 720LL * 3600);
  for (const std::string bad : {"10m", "0d", "forever", "90", "-1d", "1.5d"}) {
    const std::string message =
        remote_usage_message([&] { parse_config_text("\nentry-lifetime = " + bad + "\n", "/c/kiln.conf"); });
    CHECK_MESSAGE(message.find("/c/kiln.conf:2: entry-lifetime \"" + bad + "\" is not a duration of an hour or more") == 0,
                  message);
  }
  TempDir dir;
  const auto file = dir / "kiln.conf";
  write_config(file, "remote = http://a:1/k\nentry-lifetime = 30d\n");
  ScopedEnv remote("KILN_REMOTE", std::nullopt);
  {
    ScopedEnv lifetime("KILN_REMOTE_ENTRY_LIFETIME", std::nullopt);
    CHECK(load_config(file).entry_lifetime_s == 30LL * 86400);
  }
  {
    ScopedEnv lifetime("KILN_REMOTE_ENTRY_LIFETIME", std::string("7d"));
    CHECK(load_config(file).entry_lifetime_s == 7LL * 86400);
  }
  {
    ScopedEnv lifetime("KILN_REMOTE_ENTRY_LIFETIME", std::string("soon"));
    CHECK(remote_usage_message([&] { load_config(file); }).find("KILN_REMOTE_ENTRY_LIFETIME") == 0);
  }
}
