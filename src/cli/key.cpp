// kiln key: key lists (kiln/keys.hpp) -- init, add, revoke, rotate-root on a list file with its
// root's secret key; list and show a file or what the stores follow; trust pins a root and
// accepts a newer list into a store.
#include <memory>

#include <kiln/json.hpp>
#include <kiln/keys.hpp>

#include "verbs.hpp"

namespace kiln::cli {
namespace {

std::string comma_list(const std::vector<std::string> &items) {
  std::string out;
  for (const auto &item : items) out += (out.empty() ? "" : ",") + item;
  return out;
}

std::string key_line(const KeyListKey &key) {
  std::string line = "  " + key.key_id + "  " + key.status;
  if (key.status == "revoked") line += key.revoked_all ? " (everything it signed)" : " (since " + key.revoked_at + ")";
  return line + "  roles " + comma_list(key.roles) + "  consumers " + comma_list(key.consumers) + "  expires " + key.expires +
         (key.name.empty() ? "" : "  " + key.name) + "\n";
}

std::string list_text(const KeyListInfo &info) {
  std::string text = info.file + ": generation " + std::to_string(info.generation) + ", signed " + info.created +
                     " by root " + info.roots.back() + ", expires " + info.expires +
                     (info.expired ? " (EXPIRED)" : "") + "\n";
  if (info.roots.size() > 1) text += "  root chain " + comma_list(info.roots) + "\n";
  if (info.keys.empty()) text += "  no keys yet (kiln key add)\n";
  for (const auto &key : info.keys) text += key_line(key);
  return text;
}

int print_list(const Flags &flags, const KeyListInfo &info) {
  emit(flags, kiln::to_json(info), list_text(info));
  return 0;
}

int print_trust(const Flags &flags, const TrustStatus &status) {
  std::string text;
  if (status.root_key_id.empty()) {
    text =
        "no root key pinned: bundles and remote entries are judged by --trust keys and kiln.conf's trust = (kiln key "
        "trust --root ROOT.pub)\n";
  } else {
    text = "root " + status.root_key_id + " (" + status.root_file + ")\n";
    text += status.key_list_file.empty() ? "no key list accepted yet: every signed bundle is refused until one is "
                                           "(kiln key trust --key-list, or a bundle exported with --key-list)\n"
                                         : list_text(status.key_list);
  }
  emit(flags, kiln::to_json(status), text);
  return 0;
}

void edit_options(CLI::App *command, KeyListEdit &edit) {
  command->add_option("file", edit.file, "key list file")->required();
  command->add_option("--root", edit.root_key, "the list's current root key (PATH.key of kiln keygen)")->required();
  command->add_option("--expires", edit.expires, "when the new list expires: 365d, 12h or a UTC time; default a year");
}

struct KeyShowArgs {
  std::string key_id;
  std::string file;
};

}  // namespace

Verb add_key(CLI::App &app, const Flags &flags) {
  CLI::App *command =
      app.add_subcommand("key", "key lists: which keys may sign builds and releases, vouched for by a root key");
  command->require_subcommand(1);

  auto init = std::make_shared<KeyListEdit>();
  CLI::App *init_command = command->add_subcommand("init", "write generation 1 of a key list, signed by a root key");
  edit_options(init_command, *init);

  auto add = std::make_shared<AddKeyRequest>();
  CLI::App *add_command =
      command->add_subcommand("add", "allow a key to sign (or change its roles, consumers, expiry)");
  edit_options(add_command, add->edit);
  add_command->add_option("--key", add->public_key, "the key to allow (PATH.pub)")->required();
  add_command->add_option("--role", add->roles, "build (remote cache entries) or release (bundles); repeat")
      ->required();
  add_command->add_option("--consumer", add->consumers, "consumer it may sign for (repeat; default: every one)");
  add_command->add_option("--name", add->name, "a label for people; default: the .pub file's name");
  add_command->add_option("--key-expires", add->key_expires,
                          "when the key stops being valid: 365d, 12h or a UTC time; default a year");

  auto revoke = std::make_shared<RevokeKeyRequest>();
  CLI::App *revoke_command =
      command->add_subcommand("revoke", "refuse what a key signed from a time on (or everything, --all)");
  edit_options(revoke_command, revoke->edit);
  revoke_command->add_option("--key-id", revoke->key_id, "the key to revoke (16 hex digits, kiln key list)")
      ->required();
  revoke_command->add_option("--at", revoke->at, "refuse what it signed at or after this UTC time; default now");
  revoke_command->add_flag("--all", revoke->all,
                           "refuse everything it ever signed (a stolen key: a thief can backdate)");
  revoke_command->add_option("--reason", revoke->reason, "why, for the people reading the list");

  auto rotate = std::make_shared<KeyListEdit>();
  auto new_root = std::make_shared<std::string>();
  CLI::App *rotate_command =
      command->add_subcommand("rotate-root", "hand the list over to a new root key, endorsed by the current one");
  edit_options(rotate_command, *rotate);
  rotate_command->add_option("--new-root", *new_root, "the new root key (PATH.key of kiln keygen)")->required();

  auto list_file = std::make_shared<std::string>();
  CLI::App *list_command =
      command->add_subcommand("list", "the keys of a list file, or (no file) what the stores follow");
  list_command->add_option("file", *list_file, "key list file; default: the stores' pinned root and accepted list");

  auto show = std::make_shared<KeyShowArgs>();
  CLI::App *show_command = command->add_subcommand("show", "one key of a list file, or of the list the stores follow");
  show_command->add_option("key_id", show->key_id, "the key (16 hex digits)")->required();
  show_command->add_option("file", show->file, "key list file; default: the stores' accepted list");

  auto trust = std::make_shared<TrustRequest>();
  CLI::App *trust_command = command->add_subcommand("trust", "pin a root key in the store and accept a newer key list");
  trust_command->add_option("--root", trust->root, "the root's public key (PATH.pub) to pin");
  trust_command->add_option("--key-list", trust->key_list,
                            "a key list signed by the pinned root, newer than the store's");
  trust_command->add_option("--into", trust->into,
                            "a store directory (e.g. a robot image's layer); default: the writable cache");

  for (CLI::App *verb :
       {init_command, add_command, revoke_command, rotate_command, list_command, show_command, trust_command}) {
    verb->fallthrough();  // --json, -v after the subcommand
  }
  return {command, [&flags, command, init_command, add_command, revoke_command, rotate_command, list_command,
                    show_command, trust_command, init, add, revoke, rotate, new_root, list_file, show, trust] {
            if (init_command->parsed()) return print_list(flags, create_key_list(*init));
            if (add_command->parsed()) return print_list(flags, add_key(*add));
            if (revoke_command->parsed()) return print_list(flags, revoke_key(*revoke));
            if (rotate_command->parsed()) return print_list(flags, rotate_root(*rotate, *new_root));
            if (trust_command->parsed()) {
              Runtime runtime = make_runtime(flags);
              return print_trust(flags, runtime.trust(*trust));
            }
            if (list_command->parsed() && !list_file->empty()) return print_list(flags, read_key_list(*list_file));
            if (list_command->parsed()) return print_trust(flags, make_runtime(flags).trust_status());
            (void)command;
            KeyListInfo info;
            if (!show->file.empty()) {
              info = read_key_list(show->file);
            } else {
              const TrustStatus status = make_runtime(flags).trust_status();
              if (status.key_list_file.empty())
                throw NotFoundError("the stores follow no key list: name a FILE, or kiln key trust first");
              info = status.key_list;
            }
            for (const auto &key : info.keys) {
              if (key.key_id != show->key_id) continue;
              nlohmann::json value = kiln::to_json(info)["keys"];
              for (const auto &item : value) {
                if (item["key_id"] == key.key_id) emit(flags, item, key_line(key).substr(2));
              }
              return 0;
            }
            throw NotFoundError("key " + show->key_id + " is not in " + info.file + " (generation " +
                                std::to_string(info.generation) + "): kiln key list shows its keys");
          }};
}

}  // namespace kiln::cli
