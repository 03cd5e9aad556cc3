// Publish a plugin into the store, load it back through kiln and call it.
//   kiln-example-host <plugin.so>     (store: KILN_CACHE_DIR; device: the GPU or KILN_DEVICE)
// The file is published as example/fma: a consumer of the example's own, so no name another
// program keeps in that store is written.
#include <cstdio>
#include <exception>

#include <kiln/errors.hpp>
#include <kiln/ext/example.h>
#include <kiln/runtime.hpp>

int main(int argc, char **argv) {
  if (argc != 2) {
    std::fprintf(stderr, "usage: %s <plugin.so>\n", argv[0]);
    return 2;
  }
  try {
    kiln::Runtime runtime;  // stores + device from the environment
    kiln::PublishRequest request;
    request.consumer = "example";
    request.name = "fma";
    request.artifact_file = argv[1];  // no archs: kiln records what the file holds
    const kiln::PublishResult published = runtime.publish(request);
    std::printf("published example/fma (the example's own consumer) as %s\n", published.content_key.c_str());

    const kiln::Module module = runtime.load("example", "fma");  // typed kiln::Error on any refusal
    kiln::Instance instance = module.create_instance();
    const auto *example = instance.interface<kiln_example_v1>(KILN_EXAMPLE_INTERFACE_ID);
    if (example == nullptr) {
      std::fprintf(stderr, "the plugin does not offer %s\n", KILN_EXAMPLE_INTERFACE_ID);
      return 1;
    }
    const double answer = example->host_fma(instance.handle(), 6.0, 7.0, 0.5);
    std::printf("host_fma(6, 7, 0.5) = %g\n", answer);
    return answer == 42.5 ? 0 : 1;
  } catch (const kiln::Error &error) {
    std::fprintf(stderr, "kiln: %s\n", error.what());
    return 1;
  } catch (const std::exception &error) {
    std::fprintf(stderr, "error: %s\n", error.what());
    return 1;
  }
}
