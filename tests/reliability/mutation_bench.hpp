// The mutation suite's bench (mutation_cases.hpp runs the mutations on it): a copy of one fixture
// recipe (tests/reliability/mutation), a build of it after each mutation, what that build had to
// show, and the tallies. Where the builds run is the bench's one parameter:
//
// - local (no remotes): every `kiln build --json` in one cache, one machine building again and
//   again. A required miss is a compile ("built") into another content key; what must not
//   matter is a local hit.
// - through remote caches: a machine of its own (an empty cache) for every step, so that what it
//   gets can only come from a remote. The first machine builds the recipe and uploads it, signed.
//   After each mutation, each remote alone is asked by `kiln remote pull` (a build's own lookup
//   on an empty cache, never compiling) and must serve nothing that earlier machines uploaded --
//   an entry under the same input key (a header only the compiler's depfile names) is fetched
//   and refused as stale, a miss -- then one machine builds against every remote: a compile
//   whose content-key lookups every remote misses too, carrying the new content key and marker,
//   uploaded to every remote as the state the next mutation is compared with. What must not
//   matter, each remote alone must serve to an empty cache: fetched without a compile, signed by
//   the bench's key, the same input and content key and marker.
#pragma once

#include <map>
#include <string>
#include <vector>

#include <boost/filesystem/path.hpp>

#include "support/fixtures.hpp"

namespace kiln::reliability::mutation {

namespace fs = boost::filesystem;
using Env = std::map<std::string, std::string>;

// What one `kiln build --json` or `kiln remote pull --json` said.
struct Built {
  bool ok = false;
  std::string outcome, input_key, content_key, artifact;
  std::string remote, signed_by;               // a fetched entry: where from, whose signature
  std::map<std::string, std::string> uploads;  // remote (its URL as kiln shows it) -> status
};

// A remote cache: its name in the tallies ("http", "redis") and its KILN_REMOTE spec.
struct Remote {
  std::string name, spec;
};

class Bench {
 public:
  // `fixture`: a directory of tests/reliability/mutation; `recipe`: a recipe file in it.
  // No remotes: local.
  Bench(std::string backend, const std::string &fixture, const std::string &recipe, std::vector<Remote> remotes = {});

  fs::path dir() const { return dir_; }
  fs::path root() const { return tmp_.path(); }
  // What every build runs with (toolchain wrappers, PATH).
  Env &env() { return env_; }
  // The marker the next plugin build must carry; empty: not checked (device images).
  std::map<std::string, std::string> marker;

  // The first build of the recipe, and the state every mutation is compared with.
  void baseline(const Env &extra = {});
  // After mutating an input that must change the result: a compile into another content key.
  void must_miss(const std::string &what, const Env &extra = {}, const std::vector<std::string> &args = {});
  // After changing what must not matter: the entry built before serves.
  void must_hit(const std::string &what, const Env &extra = {}, const std::vector<std::string> &args = {});
  // Back to a state built before (an environment variable unset, the recipe's archs again): that
  // state's entry serves. Not a mutation.
  void back_to(const std::string &what, const Built &state, const Env &extra = {});
  // An environment variable set for one build: a miss whose artifact carries marker `field` =
  // `value`; unset again, `before` serves.
  void env_must_miss(const std::string &what, const Env &set, const std::string &field, const std::string &value,
                     const Built &before);

  const Built &last() const { return last_; }
  // Moves the checkout elsewhere (the caches stay); the recipe's paths are relative to it.
  void relocate(const std::string &name);
  // "mutation <backend>[ through <remote>]: N mutations, N misses, N hits, N wrong hits".
  void summary() const;

 private:
  struct Tally {
    int mutations = 0, misses = 0, hits = 0, wrong_hits = 0;
  };
  // What `kiln remote pull` on an empty cache reading one remote got: an entry (served), or
  // nothing (exit 3); answered is false when kiln failed otherwise or the remote did not answer.
  struct Pulled {
    bool answered = false, served = false;
    Built built;
  };

  // `kiln <verb...> --json <recipe> <args>` with env(), then `machine`, then `extra`. With
  // `ran`, what kiln said goes there and a failure is the caller's to judge; without, it fails.
  Built run(const std::vector<std::string> &verb, const Env &machine, const Env &extra,
            const std::vector<std::string> &args, test::CommandResult *ran = nullptr) const;
  // The environment of a machine of its own: an empty cache reading `remotes` -- writing to them
  // and signing with the bench's key when `writes` -- and trusting that key.
  Env machine(const std::vector<Remote> &remotes, bool writes);
  Pulled pull(const Remote &remote, const std::string &what, const Env &extra, const std::vector<std::string> &args);
  // A pulled entry is `state`'s: from `remote`, signed by the bench's key, the same keys and marker.
  void check_served(const Remote &remote, const std::string &what, const Built &pulled, const Built &state) const;
  // Every remote took the upload of `built` ("uploaded": it was new there).
  void check_uploaded(const std::string &what, const Built &built) const;
  void check_marker(const std::string &what, const Built &built) const;
  // The remote of `url` (how kiln names a remote in its reports), or nullptr.
  const Remote *remote_of(const std::string &url) const;
  bool local() const { return remotes_.empty(); }
  std::string label(const Remote &remote) const { return backend_ + " through " + remote.name; }

  std::string backend_, recipe_name_;
  std::vector<Remote> remotes_;
  test::TempDir tmp_;
  fs::path dir_;
  Env env_;
  Built last_;
  std::map<std::string, Tally> tallies_;  // by remote name; "" local
  fs::path signing_key_, trusted_key_;
  std::string key_id_;
  int machines_ = 0;
};

// Replaces `from` by `to` in `file` (once; it must be there).
void edit(const fs::path &file, const std::string &from, const std::string &to);
// `body` as an executable /bin/sh script.
void write_script(const fs::path &file, const std::string &body);

}  // namespace kiln::reliability::mutation
