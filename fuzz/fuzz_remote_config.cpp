// Fuzz target: the remote caches' configuration -- kiln.conf text (parse_config_text) and one
// remote's "URL[;attr...]" (parse_remote, what KILN_REMOTE items are). A remote that parses
// builds its backend without touching the network (make_backend only parses its URL).
#include "fuzz_common.hpp"

#include "remote/backend.hpp"
#include "remote/config.hpp"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t *data, std::size_t size) {
  const std::string text = kiln::fuzz::text_of(data, size);
  kiln::fuzz::run([&] {
    const auto config = kiln::remote::parse_config_text(text, "kiln.conf");
    if (config.lease_wait_s <= 0 || config.retry_after_s <= 0) kiln::fuzz::broken("a bound that is not positive", text);
  });
  kiln::fuzz::run([&] {
    const auto endpoint = kiln::remote::parse_remote(text, "KILN_REMOTE");
    if (endpoint.timeout_s <= 0 || endpoint.connect_timeout_s <= 0 || endpoint.max_bytes == 0) {
      kiln::fuzz::broken("a remote with a bound that is not positive", text);
    }
    (void)kiln::remote::make_backend(endpoint)->display_url();
  });
  return 0;
}
