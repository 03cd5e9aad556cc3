// Where a build's result can come from other than compiling it: another store that holds
// entries by input key and by content key -- a fleet's remote caches (remote/cache.hpp). The
// runtime composes one and hands it to each build (builder/builder.hpp BuilderContext), so a
// build asks through this interface alone: the builder knows no remote, and Storage holds none.
//
// What a source returns is committed into the given Storage's writable cache first (no name,
// no pointer: the build names it), so the build goes on as after a local hit.
//
// Threads: any thread.
#pragma once

#include <memory>
#include <optional>
#include <string>
#include <vector>

#include <kiln/cancel.hpp>
#include <kiln/remote.hpp>
#include <kiln/module.hpp>

namespace kiln::store {

class Storage;

class EntrySource {
 public:
  virtual ~EntrySource() = default;

  // An entry a source delivered into the writable cache.
  struct Found {
    std::string content_key;
    std::string from;       // where it came from (a remote's URL)
    std::uint64_t bytes = 0;
    std::string signed_by;  // the key id whose signature was verified; empty: none was checked
  };
  // Held while this machine builds an input key, so other machines wait for its result
  // instead of building it too; released when destroyed.
  class Claim {
   public:
    virtual ~Claim() = default;
  };

  // Where the entry for `input_key` would come from, without fetching it (for a build plan):
  // nullopt also where nothing the source could serve would be taken into `storage`.
  virtual std::optional<std::string> locate(const Storage &storage, const std::string &consumer,
                                            const std::string &input_key) const = 0;
  // The entry for `input_key`, or once a build knows its content key, that entry; nullopt:
  // none has it, or what came was refused (the source logs why).
  virtual std::optional<Found> find_by_input_key(const Storage &storage, const std::string &consumer,
                                                 const std::string &input_key) const = 0;
  virtual std::optional<Found> find_by_content_key(const Storage &storage, const std::string &consumer,
                                                   const std::string &content_key) const = 0;
  // Before building `input_key`: a claim on it (nullptr where the source offers none: build
  // anyway), or -- while another machine holds one -- a wait for its result, which ends in
  // *found, the claim, or nullptr (a wait bound or `cancel`).
  virtual std::unique_ptr<Claim> claim(const Storage &storage, const std::string &consumer, const std::string &input_key,
                                       const CancelToken *cancel, std::optional<Found> *found) const = 0;
  // What this machine built, offered to the source; each destination's outcome. Never throws.
  virtual std::vector<RemoteTransfer> offer(const Storage &storage, const Resolution &resolution) const = 0;
};

}  // namespace kiln::store
