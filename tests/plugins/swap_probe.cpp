// kiln's hot-swap test plugin: "kiln.test.swap/1" and kiln.selftest/1, with a state blob (the
// call count) carried by export_state/import_state. Built as several versions and with faults
// (KILN_TEST_SWAP_FAULT): the swap tests check that a broken version is never served.
#include <atomic>
#include <chrono>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>
#include <thread>

#include <unistd.h>

#include "kiln/ext/selftest.h"
#include "kiln/plugin.hpp"
#include "swap_probe.h"

#ifndef KILN_TEST_SWAP_VERSION
#define KILN_TEST_SWAP_VERSION 1
#endif
#define KILN_TEST_SWAP_FAULT_NONE 0
#define KILN_TEST_SWAP_FAULT_SELFTEST 1       // the self-test fails
#define KILN_TEST_SWAP_FAULT_REFUSES_STATE 2  // import_state refuses every blob
#define KILN_TEST_SWAP_FAULT_ACTIVATE 3       // activate fails
#define KILN_TEST_SWAP_FAULT_NO_INTERFACE 4   // offers no kiln.test.swap/1
#define KILN_TEST_SWAP_FAULT_SELFTEST_THROWS 5
#define KILN_TEST_SWAP_FAULT_SELFTEST_HANGS 6  // the self-test waits until released (held_call)
#define KILN_TEST_SWAP_FAULT_ACTIVATE_HANGS 7  // activate waits until released
#define KILN_TEST_SWAP_FAULT_ACTIVATE_SLOW 8   // activate takes 2 s, then succeeds
#ifndef KILN_TEST_SWAP_FAULT
#define KILN_TEST_SWAP_FAULT KILN_TEST_SWAP_FAULT_NONE
#endif

namespace {

// The state blob: format id, version, then the count.
constexpr char kStateFormat[16] = "kiln.test.swap";
constexpr std::uint32_t kStateVersion = 1;
struct StateBlob {
  char format[16];
  std::uint32_t version;
  std::uint32_t reserved;
  std::uint64_t calls;
};

std::atomic<std::uint64_t> live{0};

void mark(const std::string &file) {
  if (std::FILE *out = std::fopen(file.c_str(), "w")) std::fclose(out);
}

// The hanging and slow calls. KILN_TEST_SWAP_HOLD names a file the test made: on entering, the
// call creates FILE.entered (so the test knows a swap is inside it); a hanging call then waits
// while FILE exists, for 60 s at most, so a test that fails before releasing it still ends; on
// leaving it creates FILE.left.
void held_call(bool hang) {
  const char *held = std::getenv("KILN_TEST_SWAP_HOLD");
  const std::string hold = held != nullptr ? held : "";
  if (!hold.empty()) mark(hold + ".entered");
  if (!hang) {
    std::this_thread::sleep_for(std::chrono::seconds(2));
  } else {
    const auto give_up = std::chrono::steady_clock::now() + std::chrono::seconds(60);
    while (!hold.empty() && ::access(hold.c_str(), F_OK) == 0 && std::chrono::steady_clock::now() < give_up) {
      std::this_thread::sleep_for(std::chrono::milliseconds(5));
    }
  }
  if (!hold.empty()) mark(hold + ".left");
}

class SwapProbe final : public kiln::plugin::Instance {
 public:
  explicit SwapProbe(const kiln_host_services *host) : Instance(host) { live.fetch_add(1); }
  ~SwapProbe() override { live.fetch_sub(1); }

  kiln_status activate(const kiln_activate_params &params, kiln::plugin::Message &message) override {
    (void)params;
    if (KILN_TEST_SWAP_FAULT == KILN_TEST_SWAP_FAULT_ACTIVATE_HANGS) held_call(true);
    if (KILN_TEST_SWAP_FAULT == KILN_TEST_SWAP_FAULT_ACTIVATE_SLOW) held_call(false);
    if (KILN_TEST_SWAP_FAULT == KILN_TEST_SWAP_FAULT_ACTIVATE) {
      message.set("activate fails on purpose (KILN_TEST_SWAP_FAULT_ACTIVATE)");
      return KILN_ERR_INTERNAL;
    }
    return KILN_OK;
  }

  const void *get_interface(const char *interface_id) const noexcept override {
    if (std::strcmp(interface_id, KILN_TEST_SWAP_INTERFACE_ID) == 0) {
      return KILN_TEST_SWAP_FAULT == KILN_TEST_SWAP_FAULT_NO_INTERFACE ? nullptr : &table;
    }
    if (std::strcmp(interface_id, KILN_SELFTEST_INTERFACE_ID) == 0) return &selftest;
    return nullptr;
  }

  kiln_status export_state(void *buffer, size_t capacity, size_t *size, kiln::plugin::Message &message) const override {
    (void)message;
    *size = sizeof(StateBlob);
    if (buffer == nullptr) return KILN_OK;
    if (capacity < sizeof(StateBlob)) return KILN_ERR_INVALID_ARGUMENT;
    StateBlob blob{};
    std::memcpy(blob.format, kStateFormat, sizeof kStateFormat);
    blob.version = kStateVersion;
    blob.calls = calls.load(std::memory_order_relaxed);
    std::memcpy(buffer, &blob, sizeof blob);
    return KILN_OK;
  }

  kiln_status import_state(const void *data, size_t size, kiln::plugin::Message &message) override {
    StateBlob blob{};
    if (KILN_TEST_SWAP_FAULT == KILN_TEST_SWAP_FAULT_REFUSES_STATE) {
      message.set("import_state refuses on purpose (KILN_TEST_SWAP_FAULT_REFUSES_STATE)");
      return KILN_ERR_UNSUPPORTED;
    }
    if (size != sizeof blob) {
      message.set("state blob of the wrong size");
      return KILN_ERR_UNSUPPORTED;
    }
    std::memcpy(&blob, data, sizeof blob);
    if (std::memcmp(blob.format, kStateFormat, sizeof kStateFormat) != 0 || blob.version != kStateVersion) {
      message.set("not a kiln.test.swap v1 state blob");
      return KILN_ERR_UNSUPPORTED;
    }
    calls.store(blob.calls, std::memory_order_relaxed);
    return KILN_OK;
  }

  static const kiln_test_swap_v1 table;
  static const kiln_selftest_v1 selftest;
  std::atomic<std::uint64_t> calls{0};
};

std::uint64_t probe_version(const kiln_instance *) { return KILN_TEST_SWAP_VERSION; }

std::uint64_t probe_call(kiln_instance *instance, std::uint64_t x) {
  kiln::plugin::Instance::from<SwapProbe>(instance).calls.fetch_add(1, std::memory_order_relaxed);
  return x * 1000 + KILN_TEST_SWAP_VERSION;
}

std::uint64_t probe_calls(const kiln_instance *instance) {
  return kiln::plugin::Instance::from<SwapProbe>(instance).calls.load(std::memory_order_relaxed);
}

std::uint64_t probe_live() { return live.load(); }

// Checks what the control thread will run: call() on a throw-away count.
kiln_status probe_selftest(kiln_instance *instance, char *message, size_t message_size) {
  kiln::plugin::Message out(message, message_size);
  if (KILN_TEST_SWAP_FAULT == KILN_TEST_SWAP_FAULT_SELFTEST_THROWS) throw 42;
  if (KILN_TEST_SWAP_FAULT == KILN_TEST_SWAP_FAULT_SELFTEST_HANGS) held_call(true);
  auto &self = kiln::plugin::Instance::from<SwapProbe>(instance);
  const std::uint64_t before = self.calls.load();
  std::uint64_t answer = probe_call(instance, 8);
  self.calls.store(before);
  if (KILN_TEST_SWAP_FAULT == KILN_TEST_SWAP_FAULT_SELFTEST) answer += 1;
  if (answer != 8 * 1000 + KILN_TEST_SWAP_VERSION) {
    char text[128];
    std::snprintf(text, sizeof text, "call(8) answered %llu, expected %llu", static_cast<unsigned long long>(answer),
                  static_cast<unsigned long long>(8 * 1000 + KILN_TEST_SWAP_VERSION));
    out.set(text);
    return KILN_ERR_INTERNAL;
  }
  out.set("call(8) right");
  return KILN_OK;
}

const kiln_test_swap_v1 SwapProbe::table = {sizeof(kiln_test_swap_v1), &probe_version, &probe_call, &probe_calls,
                                            &probe_live};
const kiln_selftest_v1 SwapProbe::selftest = {sizeof(kiln_selftest_v1), &probe_selftest};

}  // namespace

KILN_PLUGIN(SwapProbe, "org.kiln.test.swap_probe", "1.0.0", KILN_TEST_SWAP_INTERFACE_ID)
