// A shared library without KILN_PLUGIN: the build succeeds, kiln must refuse the file.
extern "C" int kiln_test_not_plugin_answer() { return 42; }
