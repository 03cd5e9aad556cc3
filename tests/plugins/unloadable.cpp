// A kiln plugin that breaks every unload rule on purpose (built without kiln_add_plugin, whose
// check would refuse it): default visibility exports extra functions, an inline function's
// static local becomes an STB_GNU_UNIQUE symbol, and it is linked with -z nodelete.
// kiln publish must refuse it, naming each offending symbol.
#include <cstring>

#include "kiln/ext/example.h"
#include "kiln/plugin.hpp"

inline int &kiln_test_unique_counter() {
  static int counter = 0;  // gnu-unique with default visibility and without -fno-gnu-unique
  return counter;
}

extern "C" int kiln_test_extra_export_one() { return ++kiln_test_unique_counter(); }
extern "C" int kiln_test_extra_export_two() { return kiln_test_unique_counter(); }

namespace {

class Unloadable final : public kiln::plugin::Instance {
 public:
  using Instance::Instance;
  const void *get_interface(const char *) const noexcept override { return nullptr; }
};

}  // namespace

KILN_PLUGIN(Unloadable, "org.kiln.test.unloadable", "1.0.0", KILN_EXAMPLE_INTERFACE_ID)
