// kiln keygen: an Ed25519 key pair for signing bundles (PATH.key, mode 0600, and PATH.pub).
#include <memory>

#include <kiln/bundle.hpp>

#include "verbs.hpp"

namespace kiln::cli {

Verb add_keygen(CLI::App &app, const Flags &flags) {
  auto path = std::make_shared<std::string>();
  CLI::App *command = app.add_subcommand("keygen", "write an Ed25519 key pair for signing bundles: PATH.key and PATH.pub");
  command->add_option("-o,--output", *path, "PATH: writes PATH.key (secret, mode 0600) and PATH.pub")->required();
  return {command, [&flags, path] {
            const KeyPair pair = generate_keypair(*path);
            emit(flags,
                 {{"secret_key", pair.secret_file}, {"public_key", pair.public_file}, {"key_id", pair.key_id}},
                 "key " + pair.key_id + "\n  secret " + pair.secret_file + " (keep it private; sign with kiln export --sign)\n  public " +
                     pair.public_file + " (give it to importers: kiln import --trust)\n");
            return 0;
          }};
}

}  // namespace kiln::cli
