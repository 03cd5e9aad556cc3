// A plain shared library that is not a kiln plugin: it exports a function but no
// kiln_plugin_negotiate (and holds no build stamp). kiln must refuse it with a clear reason.
extern "C" __attribute__((visibility("default"))) int kiln_test_not_a_plugin_answer(void) { return 42; }
