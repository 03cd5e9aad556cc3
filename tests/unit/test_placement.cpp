// Placement of a plugin instance (include/kiln/placement.hpp) where no GPU is needed: what is
// refused before the plugin runs (a host-only activate, an ABI 1.0 plugin, a share of nothing),
// the partition refused without a device, and the helper refusing activate flags it does not
// know. The placements themselves run in test_placement_gpu.cpp.
#include <doctest/doctest.h>

#include <optional>
#include <string>

#include <kiln/placement.hpp>
#include <kiln/plugin.hpp>
#include <kiln/runtime.hpp>

#include "artifact/abi_layout.hpp"
#include "support/checks.hpp"
#include "support/fixtures.hpp"
#include "support/machine.hpp"
#include "support/plugin_store.hpp"
#include "support/preconditions.hpp"

using namespace kiln;
using kiln::test::contains;
using kiln::test::TempDir;

namespace {

Module load_published(TempDir &dir, std::optional<Runtime> &runtime, const char *file, const char *hostile_mode) {
  std::optional<kiln::test::ScopedEnv> mode;
  if (hostile_mode != nullptr) mode.emplace("KILN_TEST_HOSTILE", std::string(hostile_mode));
  runtime.emplace(kiln::test::store_options(dir, std::nullopt));
  kiln::test::publish_plugin(*runtime, file);
  return runtime->load("tests", "example");
}

}  // namespace

TEST_CASE("placement: a host-only activate with a stream priority is refused before the plugin runs") {
  TempDir dir;
  std::optional<Runtime> runtime;
  Module module = load_published(dir, runtime, KILN_TEST_PLUGIN_HOST_ONLY, nullptr);
  Instance instance = module.create_instance();
  ActivateOptions options;
  options.device = -1;
  options.stream_priority = -1;
  ErrorKind kind = ErrorKind::other;
  const std::string message = kiln::test::error_of([&] { instance.activate(options); }, &kind);
  CHECK(kind == ErrorKind::usage);
  CHECK(contains(message, "stream priority -1"));
  CHECK(contains(message, "host-only activate (device -1)"));
  CHECK_FALSE(instance.active());
  // Unplaced, the same instance activates.
  options.stream_priority = 0;
  instance.activate(options);
  CHECK(instance.active());
}

TEST_CASE("placement: a plugin that speaks ABI 1.0 is refused a stream priority, naming 1.1") {
  TempDir dir;
  std::optional<Runtime> runtime;
  Module module = load_published(dir, runtime, KILN_TEST_PLUGIN_HOSTILE, "entry-1.0");
  REQUIRE(module.abi_version() == KILN_ABI_MAKE_VERSION(1, 0));
  Instance instance = module.create_instance();
  ActivateOptions options;
  options.device = 0;
  options.stream_priority = -2;
  ErrorKind kind = ErrorKind::other;
  const std::string message = kiln::test::error_of([&] { instance.activate(options); }, &kind);
  CHECK(kind == ErrorKind::abi);
  CHECK(contains(message, "speaks ABI 1.0"));
  CHECK(contains(message, "needs ABI 1.1"));
  CHECK_FALSE(instance.active());
}

TEST_CASE("placement: a plugin of this ABI negotiates 1.1, whose tables are 1.0's") {
  TempDir dir;
  std::optional<Runtime> runtime;
  Module module = load_published(dir, runtime, KILN_TEST_PLUGIN_HOST_ONLY, nullptr);
  CHECK(module.abi_version() == KILN_ABI_MAKE_VERSION(1, 1));
  const artifact::AbiLayout *v1_0 = artifact::abi_layout(KILN_ABI_MAKE_VERSION(1, 0));
  const artifact::AbiLayout *v1_1 = artifact::abi_layout(KILN_ABI_MAKE_VERSION(1, 1));
  REQUIRE(v1_0 != nullptr);
  REQUIRE(v1_1 != nullptr);
  CHECK(v1_1->version == KILN_ABI_MAKE_VERSION(1, 1));
  CHECK(v1_1->entry_size == v1_0->entry_size);
  CHECK(v1_1->stamp_size == v1_0->stamp_size);
  // 1.1 appended two fields to kiln_activate_params, after flags.
  CHECK(offsetof(kiln_activate_params, stream_priority) >= offsetof(kiln_activate_params, flags) + sizeof(uint64_t));
  CHECK(offsetof(kiln_activate_params, sm_count) > offsetof(kiln_activate_params, stream_priority));
}

TEST_CASE("placement: the plugin helper refuses activate flags its headers do not define") {
  TempDir dir;
  std::optional<Runtime> runtime;
  Module module = load_published(dir, runtime, KILN_TEST_PLUGIN_HOST_ONLY, nullptr);
  Instance instance = module.create_instance();
  kiln_activate_params params{};
  params.struct_size = sizeof params;
  params.device_ordinal = -1;
  params.max_batch = 1;
  params.flags = uint64_t{1} << 7;
  char message[256] = "";
  CHECK(module.entry().activate(instance.handle(), &params, message, sizeof message) == KILN_ERR_UNSUPPORTED);
  CHECK(contains(message, "flags 0x80"));
  params.flags = 0;
  CHECK(module.entry().activate(instance.handle(), &params, message, sizeof message) == KILN_OK);
  module.entry().deactivate(instance.handle());
}

TEST_CASE("placement: a share of no SMs is refused, naming the fix") {
  ErrorKind kind = ErrorKind::other;
  std::string message = kiln::test::error_of([] { GpuPartition::split(0, SmShare{}); }, &kind);
  CHECK(kind == ErrorKind::usage);
  CHECK(contains(message, "reserves nothing"));
  SmShare whole;
  whole.fraction = 1.0;
  message = kiln::test::error_of([&] { GpuPartition::split(0, whole); }, &kind);
  CHECK(kind == ErrorKind::usage);
  CHECK(contains(message, "fraction in (0, 1)"));
}

TEST_CASE("placement: without a CUDA device a partition is refused, naming why" *
          kiln::test::skip_if(kiln::test::cuda_driver)) {
  SmShare share;
  share.count = 16;
  ErrorKind kind = ErrorKind::usage;
  const std::string message = kiln::test::error_of([&] { GpuPartition::split(0, share); }, &kind);
  CHECK(kind == ErrorKind::other);
  CHECK(contains(message, "no CUDA device to partition"));
}
