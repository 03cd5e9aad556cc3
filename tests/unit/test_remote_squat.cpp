// A key planted on a remote by someone who can write there but cannot sign as the fleet (or
// damaged bytes) does not poison the fleet for good: the next upload by a machine signing with
// a trusted key replaces what every machine refuses, by a compare-and-swap, and what verifies
// is never overwritten. Against the storing fakes of support/fake_stores.hpp: a WebDAV server
// honouring If-Match, one ignoring it (as nginx's dav module does), and a Redis.
#include <doctest/doctest.h>

#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include <kiln/bundle.hpp>
#include <kiln/json.hpp>
#include <kiln/runtime.hpp>

#include "bundle/writer.hpp"
#include "remote/backend.hpp"
#include "remote/cache.hpp"
#include "store/storage.hpp"
#include "support/checks.hpp"
#include "support/fake_stores.hpp"
#include "support/fixtures.hpp"
#include "support/plugin_store.hpp"

using namespace kiln;
using kiln::test::contains;
using kiln::test::TempDir;
namespace fs = boost::filesystem;
namespace remote = kiln::remote;

namespace {

// One of the storing fakes, whichever kind.
struct Server {
  std::string name;
  std::function<std::string()> url;
  std::function<std::optional<std::string>(const std::string &)> value;
  std::function<void(const std::string &, const std::string &)> set;
  std::function<void(std::function<void()>)> before_replace;
  bool compare_and_swap = true;  // its conditional writes are atomic (false: nginx's window)
  std::shared_ptr<void> keep;
};

template <class Store, class... Args>
Server server_of(const std::string &name, bool compare_and_swap, Args... args) {
  auto store = std::make_shared<Store>(args...);
  return {name,
          [store] { return store->url(); },
          [store](const std::string &key) { return store->value(key); },
          [store](const std::string &key, const std::string &value) { store->set(key, value); },
          [store](std::function<void()> hook) { store->before_replace(std::move(hook)); },
          compare_and_swap,
          store};
}

std::vector<Server> servers() {
  return {server_of<kiln::test::StoringWebDav>("WebDAV honouring If-Match", true, true),
          server_of<kiln::test::StoringWebDav>("WebDAV ignoring If-Match (nginx)", false, false),
          server_of<kiln::test::StoringRedis>("Redis", true)};
}

const std::string kSquatInputKey = "0123456789abcdef0123456789abcdef";

// A machine: its own cache, with tests/example (a host-only plugin, nothing compiled) published
// there when `publish` is set (a second machine starts empty), and its remote configuration.
struct Machine {
  // `toolkit`: the CUDA version the entry records (another one makes another content key).
  explicit Machine(bool publish, int toolkit = 0) {
    if (publish) {
      Runtime runtime(kiln::test::store_options(dir));
      PublishRequest request;
      request.consumer = "tests";
      request.name = "example";
      request.artifact_file = KILN_TEST_PLUGIN_HOST_ONLY;
      if (toolkit != 0) request.cuda_toolkit_version = toolkit;
      runtime.publish(request);
    }
    storage = std::make_unique<store::Storage>(std::vector<store::StoreLocation>{{dir / "cache", true, "test"}});
  }
  Resolution entry() const {
    Resolution resolution = *storage->resolve("tests", "example");
    resolution.input_key = kSquatInputKey;  // as a build of these inputs records it
    return resolution;
  }
  // The entry as a one-entry bundle signed with `key` ("" unsigned), valid for `lifetime_s` from
  // now (negative: expired that long ago): what an upload sends.
  std::string bundle(const std::string &key, std::int64_t lifetime_s = bundle::kDefaultEntryLifetimeSeconds) const {
    const fs::path file = dir / ("bundle-" + std::to_string(++made) + ".kbundle");
    bundle::write_entry_bundle(entry(), file.string(), key, lifetime_s);
    return kiln::test::read_text(file);
  }
  // Every machine here may write (read-write): what it uploads, and what it replaces, is the point.
  std::unique_ptr<remote::RemoteCache> cache(const std::string &url, const std::vector<std::string> &trusted,
                                             const std::string &sign, bool accept_unsigned = false) {
    remote::RemoteConfig config;
    config.remotes.push_back(remote::parse_remote(url + ";timeout=5;read-write", "test"));
    config.trusted_keys = trusted;
    config.signing_key = sign;
    config.accept_unsigned = accept_unsigned;
    return std::make_unique<remote::RemoteCache>(config, [this](LogLevel, const std::string &line) {
      logged += line + "\n";
    });
  }

  TempDir dir;
  std::unique_ptr<store::Storage> storage;
  std::string logged;
  mutable int made = 0;
};

struct Keys {
  TempDir dir;
  KeyPair fleet = generate_keypair((dir / "fleet").string());
  KeyPair fleet2 = generate_keypair((dir / "fleet2").string());  // a second key the fleet trusts
  KeyPair rogue = generate_keypair((dir / "rogue").string());    // a writer the fleet does not trust
};

// What someone with write access plants under a key: through a backend, as any client would.
void plant(const Server &server, const std::string &key, const std::string &value) {
  REQUIRE(remote::make_backend(remote::parse_remote(server.url(), "test"))->put_new(key, value));
}

}  // namespace

TEST_CASE("remote squat: an entry planted under its key that the fleet refuses is replaced by a trusted upload") {
  Keys keys;
  Machine a(true);
  const std::string content_key = a.entry().content_key, entry = "cas/tests/" + content_key;
  const std::string rogue_signed = a.bundle(keys.rogue.secret_file);
  std::string damaged = a.bundle(keys.fleet.secret_file);
  damaged[damaged.size() / 2] = static_cast<char>(damaged[damaged.size() / 2] ^ 0x40);
  const struct {
    const char *what;
    std::string planted;
    std::string named;  // what the refusal names ("": any reason)
  } plants[] = {
      {"signed by a key the fleet does not trust", rogue_signed, keys.rogue.key_id},
      {"unsigned", a.bundle(""), "not signed"},
      {"a byte changed", damaged, ""},  // refused for whatever the byte hit: compression, signature, digest
      {"not a kiln bundle", "planted", "not a kiln bundle"},
      // Signed by the fleet, but out of date, or claiming to outlive the fleet's entry lifetime.
      {"expired", a.bundle(keys.fleet.secret_file, -3600), "expired at"},
      {"valid for longer than the entry lifetime", a.bundle(keys.fleet.secret_file, 400LL * 86400),
       "claims to be valid for 400 days"},
  };
  for (const auto &plant_case : plants) {
    for (const Server &server : servers()) {
      CAPTURE(plant_case.what);
      CAPTURE(server.name);
      plant(server, entry, plant_case.planted);

      // Every machine refuses it, and says which key signed it and that a trusted upload replaces it.
      Machine b(false);
      CHECK_FALSE(b.cache(server.url(), {keys.fleet.public_file}, "")->find_by_content_key(*b.storage, "tests", content_key));
      CHECK(contains(b.logged, "refused"));
      CHECK(contains(b.logged, plant_case.named));
      CHECK(contains(b.logged, "replaces it"));

      a.logged.clear();
      const auto uploads = a.cache(server.url(), {keys.fleet.public_file}, keys.fleet.secret_file)->offer(*a.storage, a.entry());
      REQUIRE(uploads.size() == 1);
      CHECK(uploads[0].status == "replaced");
      CHECK(uploads[0].bytes > 0);
      CHECK(contains(uploads[0].replaced, entry));
      CHECK(contains(uploads[0].replaced, plant_case.named));
      CHECK(to_json(uploads[0])["replaced"] == uploads[0].replaced);
      CHECK(contains(a.logged, "replaced " + entry));
      CHECK(server.value(entry) != plant_case.planted);

      // A second machine now fetches it, verified, and commits it.
      Machine c(false);
      const auto fetched = c.cache(server.url(), {keys.fleet.public_file}, "")->find_by_content_key(*c.storage, "tests", content_key);
      REQUIRE(fetched);
      CHECK(fetched->signed_by == keys.fleet.key_id);
      CHECK(fetched->content_key == content_key);

      // Once replaced, a second upload finds what it accepts: present, untouched.
      const auto value = server.value(entry);
      const auto again = a.cache(server.url(), {keys.fleet.public_file}, keys.fleet.secret_file)->offer(*a.storage, a.entry());
      CHECK(again.at(0).status == "present");
      CHECK(server.value(entry) == value);
    }
  }
}

TEST_CASE("remote squat: an entry the uploader accepts is never overwritten") {
  Keys keys;
  Machine a(true), other(true);
  const std::string content_key = a.entry().content_key, entry = "cas/tests/" + content_key;
  const struct {
    const char *what;
    std::string planted;
    std::vector<std::string> trusted;  // the uploader's
    std::string sign;
    bool accept_unsigned = false;
  } plants[] = {
      {"signed by another trusted key", other.bundle(keys.fleet2.secret_file),
       {keys.fleet.public_file, keys.fleet2.public_file}, keys.fleet.secret_file},
      {"signed by the same key, another machine's bundle", other.bundle(keys.fleet.secret_file),
       {keys.fleet.public_file}, keys.fleet.secret_file},
      {"unsigned and intact, no key trusted, accept-unsigned", other.bundle(""), {}, "", true},
      // Its own upload would be refused by it (its key is not trusted): it replaces nothing.
      {"refused, by a machine signing with a key it does not trust", other.bundle(keys.rogue.secret_file),
       {keys.fleet.public_file}, keys.fleet2.secret_file},
  };
  for (const auto &plant_case : plants) {
    for (const Server &server : servers()) {
      CAPTURE(plant_case.what);
      CAPTURE(server.name);
      plant(server, entry, plant_case.planted);
      a.logged.clear();
      const auto uploads = a.cache(server.url(), plant_case.trusted, plant_case.sign, plant_case.accept_unsigned)
                               ->offer(*a.storage, a.entry());
      REQUIRE(uploads.size() == 1);
      CHECK(uploads[0].status == "present");
      CHECK(uploads[0].replaced.empty());
      CHECK(server.value(entry) == plant_case.planted);
    }
  }
  // The machine that refuses its own upload says why it replaces nothing.
  CHECK(contains(a.logged, "it refuses its own upload"));
}

TEST_CASE("remote squat: an entry the fleet signed that expires within a tenth of its lifetime is refreshed by an upload") {
  Keys keys;
  Machine a(true);
  const std::string content_key = a.entry().content_key, entry = "cas/tests/" + content_key;
  for (const Server &server : servers()) {
    CAPTURE(server.name);
    // Valid for two more days of ninety: still fetched, and replaced by the next upload.
    const std::string ageing = a.bundle(keys.fleet.secret_file, 2 * 86400);
    plant(server, entry, ageing);
    Machine b(false);
    const auto fetched = b.cache(server.url(), {keys.fleet.public_file}, "")->find_by_content_key(*b.storage, "tests", content_key);
    REQUIRE(fetched);
    CHECK(fetched->signed_by == keys.fleet.key_id);
    const auto uploads = a.cache(server.url(), {keys.fleet.public_file}, keys.fleet.secret_file)->offer(*a.storage, a.entry());
    REQUIRE(uploads.size() == 1);
    CHECK(uploads[0].status == "replaced");
    CHECK(contains(uploads[0].replaced, "within a tenth of the entry lifetime"));
    const auto refreshed = server.value(entry);
    REQUIRE(refreshed);
    CHECK(*refreshed != ageing);
    // The refreshed one is valid for the whole lifetime: the next upload leaves it.
    CHECK(a.cache(server.url(), {keys.fleet.public_file}, keys.fleet.secret_file)->offer(*a.storage, a.entry()).at(0).status ==
          "present");
    CHECK(server.value(entry) == refreshed);
  }
}

TEST_CASE("remote squat: a machine nothing vouches for judges entries as its fetches would, and replaces none") {
  Keys keys;
  Machine a(true);
  const std::string entry = "cas/tests/" + a.entry().content_key;
  // No trusted key, no pinned root, no accept-unsigned: it would refuse its own upload, signed
  // or not, so it has nothing to replace a refused entry with.
  const struct {
    const char *what;
    std::string sign;
    std::string said;
  } machines[] = {
      {"unsigned uploads", "", "is not signed, and this machine accepts only entries a trusted key signed"},
      {"signed uploads", keys.fleet.secret_file,
       "is signed by key " + keys.fleet.key_id + " but this machine trusts no key"},
  };
  for (const auto &machine : machines) {
    for (const Server &server : servers()) {
      CAPTURE(machine.what);
      CAPTURE(server.name);
      const std::string planted = a.bundle(keys.rogue.secret_file);
      plant(server, entry, planted);
      a.logged.clear();
      const auto uploads = a.cache(server.url(), {}, machine.sign)->offer(*a.storage, a.entry());
      REQUIRE(uploads.size() == 1);
      CHECK(uploads[0].status == "present");
      CHECK(uploads[0].replaced.empty());
      CHECK(server.value(entry) == planted);
      CHECK(contains(a.logged, "it refuses its own upload"));
      CHECK_MESSAGE(contains(a.logged, machine.said), a.logged);
    }
  }
}

TEST_CASE("remote squat: a pointer planted under an input key is replaced when it leads nowhere the uploader accepts") {
  Keys keys;
  Machine a(true), other(true, 12000);
  const std::string content_key = a.entry().content_key, pointer = "ac/tests/" + kSquatInputKey;
  const std::string other_key = other.entry().content_key;
  REQUIRE(other_key != content_key);
  const struct {
    const char *what;
    std::string pointed;
    std::optional<std::string> target;  // what cas/tests/<pointed> holds
    bool replaced;
  } plants[] = {
      {"no content key", "garbage", std::nullopt, true},
      {"an entry the remote does not hold", other_key, std::nullopt, true},
      {"an entry signed by an untrusted key", other_key, other.bundle(keys.rogue.secret_file), true},
      // Another machine's valid build of these inputs: both are, and its pointer stays.
      {"another trusted build of these inputs", other_key, other.bundle(keys.fleet.secret_file), false},
  };
  for (const auto &plant_case : plants) {
    for (const Server &server : servers()) {
      CAPTURE(plant_case.what);
      CAPTURE(server.name);
      plant(server, pointer, plant_case.pointed);
      if (plant_case.target) plant(server, "cas/tests/" + other_key, *plant_case.target);
      const auto uploads = a.cache(server.url(), {keys.fleet.public_file}, keys.fleet.secret_file)->offer(*a.storage, a.entry());
      REQUIRE(uploads.size() == 1);
      CHECK(uploads[0].status == (plant_case.replaced ? "replaced" : "uploaded"));
      CHECK(server.value(pointer) == (plant_case.replaced ? content_key : plant_case.pointed));
      if (!plant_case.replaced) continue;
      CHECK(contains(uploads[0].replaced, pointer));
      Machine b(false);
      const auto fetched = b.cache(server.url(), {keys.fleet.public_file}, "")->find_by_input_key(*b.storage, "tests", kSquatInputKey);
      REQUIRE(fetched);
      CHECK(fetched->content_key == content_key);
      CHECK(fetched->signed_by == keys.fleet.key_id);
    }
  }
}

TEST_CASE("remote squat: a replacement never clobbers a trusted entry written since the key was read") {
  Keys keys;
  Machine a(true), other(true);
  const std::string content_key = a.entry().content_key, entry = "cas/tests/" + content_key;
  const std::vector<std::string> trusted{keys.fleet.public_file, keys.fleet2.public_file};
  const std::string honest = other.bundle(keys.fleet2.secret_file);  // another trusted machine's
  for (const Server &server : servers()) {
    CAPTURE(server.name);
    plant(server, entry, a.bundle(keys.rogue.secret_file));
    // The other machine replaces the planted entry between this upload's read and its write.
    server.before_replace([&server, &entry, &honest] { server.set(entry, honest); });
    const auto uploads = a.cache(server.url(), trusted, keys.fleet.secret_file)->offer(*a.storage, a.entry());
    REQUIRE(uploads.size() == 1);
    Machine b(false);
    const auto fetched = b.cache(server.url(), trusted, "")->find_by_content_key(*b.storage, "tests", content_key);
    REQUIRE(fetched);
    if (server.compare_and_swap) {
      CHECK(uploads[0].status == "present");  // the other machine's entry stays
      CHECK(server.value(entry) == honest);
      CHECK(fetched->signed_by == keys.fleet2.key_id);
    } else {
      // Without compare-and-swap (nginx) the later write wins: still an entry the fleet trusts.
      CHECK(uploads[0].status == "replaced");
      CHECK(server.value(entry) != honest);
      CHECK(fetched->signed_by == keys.fleet.key_id);
    }
  }
}

TEST_CASE("remote squat: replace is a compare-and-swap on each backend") {
  for (const Server &server : servers()) {
    CAPTURE(server.name);
    const auto backend = remote::make_backend(remote::parse_remote(server.url(), "test"));
    CHECK_FALSE(backend->replace("cas/tests/k", "old", "new"));  // nothing there
    CHECK_FALSE(server.value("cas/tests/k"));
    REQUIRE(backend->put_new("cas/tests/k", "old"));
    CHECK_FALSE(backend->put_new("cas/tests/k", "other"));
    CHECK_FALSE(backend->replace("cas/tests/k", "not what it holds", "new"));
    CHECK(server.value("cas/tests/k") == "old");
    CHECK(backend->replace("cas/tests/k", "old", "new"));
    CHECK(server.value("cas/tests/k") == "new");
    CHECK_FALSE(backend->replace("cas/tests/k", "old", "newer"));
    CHECK(server.value("cas/tests/k") == "new");
  }
}
