// A plugin that breaks the ABI's rules on purpose, written against the raw C ABI (no helper,
// so nothing catches for it). What it does wrong is chosen at run time by the environment
// variable KILN_TEST_HOSTILE, read at each call:
//   negotiate-runtime-error | negotiate-int | negotiate-custom   negotiate throws
//   negotiate-unsupported                                        negotiate finds no version
//   null-entry                                                   KILN_OK with no entry table
//   entry-1.0 | entry-too-small | entry-newer                    the entry table is as ABI 1.0
//        defined it / one field short of that / longer than this kiln's (a newer minor)
//   create-throws | create-no-nul | create-null-instance         create misbehaves
//   activate-throws | activate-no-nul                            activate misbehaves
//   get-interface-throws                                         get_interface throws an int
//   teardown-throws                                              deactivate and destroy throw
// Anything else (or unset): a well-behaved plugin offering "kiln.example/1" (host_fma only).
// Its constructor creates the file named by KILN_TEST_CONSTRUCTOR_MARK, so tests can tell
// whether any of its code ran.
#include <fcntl.h>
#include <unistd.h>

#include <cstdlib>
#include <cstring>
#include <stdexcept>

#include "kiln/ext/example.h"
#include "kiln/plugin.hpp"  // KILN_PLUGIN_STAMP_INIT only

namespace {

struct Unnamed {  // a type the host cannot name: not a std::exception
  int code;
};

bool mode(const char *wanted) {
  const char *value = std::getenv("KILN_TEST_HOSTILE");
  return value != nullptr && std::strcmp(value, wanted) == 0;
}

void fill_without_nul(char *message, size_t size) {
  if (message != nullptr) std::memset(message, 'x', size);
}

struct HostileInstance {
  bool active = false;
};

double hostile_fma(const kiln_instance *, double a, double b, double c) { return a * b + c; }
kiln_status hostile_saxpy(kiln_instance *, float, const float *, float *, uint32_t, char *message, size_t size) {
  kiln::plugin::Message(message, size).set("saxpy: no device code");
  return KILN_ERR_UNSUPPORTED;
}
int32_t hostile_arch(const kiln_instance *) { return 0; }
const kiln_example_v1 kTable = {sizeof(kiln_example_v1), &hostile_fma, &hostile_saxpy, &hostile_arch};

kiln_status hostile_create(const kiln_create_params *, kiln_instance **instance, char *message, size_t size) {
  *instance = nullptr;
  if (mode("create-throws")) throw Unnamed{1};
  if (mode("create-no-nul")) {
    fill_without_nul(message, size);
    return KILN_ERR_INTERNAL;
  }
  if (mode("create-null-instance")) return KILN_OK;
  *instance = reinterpret_cast<kiln_instance *>(new HostileInstance);
  return KILN_OK;
}

kiln_status hostile_activate(kiln_instance *instance, const kiln_activate_params *, char *message, size_t size) {
  if (mode("activate-throws")) throw std::runtime_error("activate exploded");
  if (mode("activate-no-nul")) {
    fill_without_nul(message, size);
    return KILN_ERR_INTERNAL;
  }
  reinterpret_cast<HostileInstance *>(instance)->active = true;
  return KILN_OK;
}

void hostile_deactivate(kiln_instance *instance) {
  if (mode("teardown-throws")) throw std::logic_error("deactivate exploded");
  reinterpret_cast<HostileInstance *>(instance)->active = false;
}

void hostile_destroy(kiln_instance *instance) {
  delete reinterpret_cast<HostileInstance *>(instance);
  if (mode("teardown-throws")) throw 13;
}

const void *hostile_get_interface(const kiln_instance *, const char *id) {
  if (mode("get-interface-throws")) throw 7;
  return std::strcmp(id, KILN_EXAMPLE_INTERFACE_ID) == 0 ? &kTable : nullptr;
}

const char *const kInterfaceIds[] = {KILN_EXAMPLE_INTERFACE_ID, nullptr};

__attribute__((used, section(".kiln_stamp"))) kiln_build_stamp hostile_stamp = KILN_PLUGIN_STAMP_INIT;

// The entry table followed by what a later minor version might append.
struct NewerEntry {
  kiln_plugin_entry entry;
  void *appended[4];
};
NewerEntry hostile_entry = {{sizeof(kiln_plugin_entry), &hostile_stamp, "org.kiln.test.hostile", "1.0.0", kInterfaceIds,
                             &hostile_create, &hostile_activate, &hostile_deactivate, &hostile_destroy,
                             &hostile_get_interface, nullptr, nullptr},
                            {nullptr, nullptr, nullptr, nullptr}};

constexpr uint32_t kEntrySize_1_0 = offsetof(kiln_plugin_entry, import_state) + sizeof(void *);

__attribute__((constructor)) void hostile_mark_loaded() {
  if (const char *mark = std::getenv("KILN_TEST_CONSTRUCTOR_MARK")) {
    const int fd = ::open(mark, O_WRONLY | O_CREAT | O_CLOEXEC, 0644);
    if (fd >= 0) ::close(fd);
  }
}

}  // namespace

extern "C" KILN_PLUGIN_EXPORT kiln_status kiln_plugin_negotiate(const kiln_negotiation_request *request,
                                                               kiln_negotiation_answer *answer) {
  if (mode("negotiate-runtime-error")) throw std::runtime_error("negotiate exploded");
  if (mode("negotiate-int")) throw 42;
  if (mode("negotiate-custom")) throw Unnamed{2};
  if (mode("negotiate-unsupported")) return KILN_ERR_UNSUPPORTED;
  answer->abi_version = KILN_ABI_MAKE_VERSION(1, 0);
  answer->entry = mode("null-entry") ? nullptr : &hostile_entry.entry;
  hostile_entry.entry.struct_size = sizeof(kiln_plugin_entry);
  if (mode("entry-1.0")) hostile_entry.entry.struct_size = kEntrySize_1_0;
  if (mode("entry-too-small")) hostile_entry.entry.struct_size = kEntrySize_1_0 - uint32_t{sizeof(void *)};
  if (mode("entry-newer")) {
    hostile_entry.entry.struct_size = uint32_t{sizeof(NewerEntry)};
    answer->abi_version = request->abi_max;  // the newest the host speaks
  }
  return KILN_OK;
}
