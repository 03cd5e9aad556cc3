// The ABI's append-only promise: a plugin that negotiated version V must fill the tables as V
// defined them, no more; the host never reads past a table's struct_size; a plugin of a newer
// minor (longer tables) binds too. abi/README.md "Versions" documents the rules.
#include <doctest/doctest.h>

#include <cstddef>

#include <kiln/ext/example.h>
#include <kiln/plugin.hpp>
#include <kiln/runtime.hpp>
#include <kiln/version.hpp>

#include "artifact/abi_layout.hpp"
#include "support/fixtures.hpp"
#include "support/plugin_store.hpp"

using namespace kiln;
using kiln::test::error_of;
using kiln::test::has;
using kiln::test::ScopedEnv;
using kiln::test::TempDir;

namespace {

// What ABI 1.0 defined, spelled out field by field (not through sizeof of today's headers).
constexpr std::size_t kEntry_1_0 = offsetof(kiln_plugin_entry, import_state) + sizeof(void *);
constexpr std::size_t kStamp_1_0 = KILN_STAMP_MAGIC_SIZE + 4 + 4 + (KILN_STAMP_KEY_SIZE + 1) + KILN_STAMP_ARCHS_SIZE;

Module load_hostile(const char *mode, TempDir &dir, std::optional<Runtime> &runtime) {
  ScopedEnv env("KILN_TEST_HOSTILE", std::string(mode));
  runtime.emplace(kiln::test::store_options(dir, std::nullopt));
  kiln::test::publish_plugin(*runtime, KILN_TEST_PLUGIN_HOSTILE);
  return runtime->load("tests", "example");
}

}  // namespace

TEST_CASE("abi versions: each version's table sizes are what that version defined") {
  const artifact::AbiLayout *v1_0 = artifact::abi_layout(KILN_ABI_MAKE_VERSION(1, 0));
  REQUIRE(v1_0 != nullptr);
  CHECK(v1_0->entry_size == kEntry_1_0);
  CHECK(v1_0->stamp_size == kStamp_1_0);
  // A minor this kiln does not list takes the newest sizes it knows of that major; another
  // major has none (it never binds).
  CHECK(artifact::abi_layout(KILN_ABI_MAKE_VERSION(1, 0xfff0)) != nullptr);
  CHECK(artifact::abi_layout(KILN_ABI_MAKE_VERSION(2, 0)) == nullptr);
  CHECK(artifact::abi_layout(KILN_ABI_MAKE_VERSION(0, 9)) == nullptr);
  // The host's own sizes never fall below what any version it speaks requires.
  CHECK(artifact::abi_layout(kAbiVersion)->entry_size <= sizeof(kiln_plugin_entry));
}

TEST_CASE("abi versions: a 1.0 plugin with a 1.0-sized entry table binds and works") {
  TempDir dir;
  std::optional<Runtime> runtime;
  Module module = load_hostile("entry-1.0", dir, runtime);
  CHECK(module.abi_version() == KILN_ABI_MAKE_VERSION(1, 0));
  CHECK(module.entry().struct_size == kEntry_1_0);
  Instance instance = module.create_instance();
  instance.activate(-1, 2);
  const auto *example = instance.interface<kiln_example_v1>(KILN_EXAMPLE_INTERFACE_ID);
  REQUIRE(example != nullptr);
  CHECK(example->host_fma(instance.handle(), 2.0, 3.0, 1.0) == doctest::Approx(7.0));
}

TEST_CASE("abi versions: an entry table smaller than its negotiated version defines is refused, naming both sizes") {
  TempDir dir;
  std::optional<Runtime> runtime;
  const std::string message = error_of<AbiError>([&] { load_hostile("entry-too-small", dir, runtime); });
  CHECK(has(message, "returned a " + std::to_string(kEntry_1_0 - sizeof(void *)) + "-byte entry table"));
  CHECK(has(message, "ABI 1.0 defines " + std::to_string(kEntry_1_0) + " bytes"));
}

TEST_CASE("abi versions: a longer entry table (a newer minor) binds; the host keeps only the fields it knows") {
  TempDir dir;
  std::optional<Runtime> runtime;
  Module module = load_hostile("entry-newer", dir, runtime);
  CHECK(module.abi_version() == kAbiVersion);
  // The host's view of the table stops at its own last field: nothing past it is ever read.
  CHECK(module.entry().struct_size == sizeof(kiln_plugin_entry));
  Instance instance = module.create_instance();
  CHECK(instance.interface<kiln_example_v1>(KILN_EXAMPLE_INTERFACE_ID) != nullptr);
}

TEST_CASE("abi versions: the helper answers a host whose request and answer are as ABI 1.0 defined them") {
  // A 1.0 host's structs are what 1.0 defined; a helper built on newer headers must still answer.
  kiln_host_services host{};
  host.struct_size = sizeof host;
  kiln_negotiation_request request{};
  request.struct_size = static_cast<uint32_t>(offsetof(kiln_negotiation_request, host) + sizeof request.host);
  request.abi_min = KILN_ABI_MAKE_VERSION(1, 0);
  request.abi_max = KILN_ABI_MAKE_VERSION(1, 0);
  request.host = &host;
  kiln_negotiation_answer answer{};
  answer.struct_size = static_cast<uint32_t>(offsetof(kiln_negotiation_answer, entry) + sizeof answer.entry);
  const kiln_plugin_entry entry{};
  CHECK(kiln::plugin::negotiate(&request, &answer, &entry, KILN_ABI_MAKE_VERSION(1, 0), KILN_ABI_VERSION) == KILN_OK);
  CHECK(answer.abi_version == KILN_ABI_MAKE_VERSION(1, 0));
  CHECK(answer.entry == &entry);
  request.struct_size = 8;  // too small even for 1.0
  CHECK(kiln::plugin::negotiate(&request, &answer, &entry, KILN_ABI_MAKE_VERSION(1, 0), KILN_ABI_VERSION) ==
        KILN_ERR_INVALID_ARGUMENT);
}
