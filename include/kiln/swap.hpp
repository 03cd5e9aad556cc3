// kiln: hot swap. Serve a plugin interface to real-time control threads and replace the version
// behind it while they keep calling, without ever blocking them (docs/architecture.md §7).
//
//   kiln::Runtime runtime;
//   kiln::Swappable<kiln_ik_v1> ik(runtime, {"kiln-ik", "iiwa14", KILN_IK_INTERFACE_ID, 0, 64});
//   kiln::SwapReader reader = ik.register_reader();           // on or for the control thread
//   // control thread, every cycle:
//   auto served = ik.acquire(reader);                         // one acquire load
//   served->solve_async(served.instance, &problem, &result, msg, sizeof msg);
//   reader.quiescent();                                       // nothing acquired is held any more
//   // any setup thread:
//   kiln::SwapReport report = ik.swap();                      // what consumer/name resolves to now
//   // or from other processes: SwapOptions::watch = true, then `kiln swap kiln-ik iiwa14 [--to KEY]`,
//   // `kiln publish` or `kiln build` of it make a background thread of this one swap (request_swap)
//
// Readers (QSBR, as userspace-RCU's urcu-qsbr): a registered control thread reads the serving
// version with one acquire load and announces a quiescent state (one load and one release store)
// when it holds nothing it acquired. A swap publishes the new version and retires the old one only
// after every online reader passed a quiescent point (the grace period). Readers never wait,
// allocate, lock or make a system call; the swap thread does all of that.
//
// A swap is a transaction: resolve or build -> load -> create -> activate (same device and
// max_batch) -> self-test ("kiln.selftest/1", abi/kiln/ext/selftest.h) -> the host's shadow check
// -> state migration (export_state of the serving version, import_state into the new one) ->
// publish -> grace period -> retire. Any failure before publish leaves the serving version
// serving and throws SwapError with the step and the reasons. Every call into plugin code has a
// deadline (SwapDeadlines): a plugin that hangs fails the swap (SwapError::timed_out()) and its
// version is quarantined until the call returns, never unloaded under it. Retired versions beyond
// keep_resident are deactivated, destroyed and unloaded; a shared object that registered device
// code with the CUDA runtime (an ".nv_fatbin" section) is kept mapped, and the report says so
// (abi/README.md "Swap-safe plugins").
#pragma once

#include <atomic>
#include <chrono>
#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include <kiln/errors.hpp>
#include <kiln/plugin.h>
#include <kiln/recipe.hpp>
#include <kiln/runtime.hpp>

namespace kiln {

// One version able to serve: an active instance of a loaded plugin and its interface table.
// Immutable from the moment it is published until it is retired.
struct ServedVersion {
  const void *table = nullptr;        // the interface table (e.g. const kiln_ik_v1 *)
  kiln_instance *instance = nullptr;  // first argument of the table's functions
  std::uint64_t serial = 0;           // 1, 2, ... per Swappable, in the order versions were loaded
  const char *content_key = "";       // of its store entry; lives as long as the version
};

// What a control thread holds for one cycle: the table typed, and the instance to pass to it.
template <class Interface>
struct Serving {
  const Interface *table;
  kiln_instance *instance;
  std::uint64_t serial;
  const Interface *operator->() const noexcept { return table; }
  // False once the Swappable is being destroyed (no table, serial 0): a control thread that may
  // still cycle then stops calling.
  explicit operator bool() const noexcept { return table != nullptr; }
};

namespace swap_detail {
struct Domain;  // the readers' registry and the published pointer (src/swap)
struct ReaderSlot;
}  // namespace swap_detail

// A registered control thread. Made by Swappable::register_reader, used by one thread at a time,
// movable to the thread that uses it (which calls online() first). Destroying it unregisters it;
// a thread that ends with its reader online holds every later grace period back until the
// reader is destroyed or put offline (SwapReport::held_back_by says so).
class SwapReader {
 public:
  SwapReader(SwapReader &&) noexcept;
  SwapReader &operator=(SwapReader &&) noexcept;
  ~SwapReader();  // [setup-thread or the reader's own thread] not real-time safe

  // [control-thread: real-time safe] Nothing acquired before this call is held any more: two
  // loads and a compare, plus one store and a fence once per grace period. Call once per cycle,
  // after the cycle's last use of what acquire() returned (results of an asynchronous solve
  // included). On an offline reader it brings the reader online, as online() does.
  void quiescent() noexcept;
  // [control-thread] About to stop calling acquire() for a while (waiting, sleeping, shutting
  // down): swaps stop waiting for this thread. online() before the next acquire(). Not needed for
  // a loop that keeps cycling.
  void offline() noexcept;
  void online() noexcept;  // one sequentially consistent fence

 private:
  template <class>
  friend class Swappable;
  friend class SwapCore;
  SwapReader(std::shared_ptr<swap_detail::Domain> domain, swap_detail::ReaderSlot *slot) noexcept;
  std::shared_ptr<swap_detail::Domain> domain_;
  swap_detail::ReaderSlot *slot_ = nullptr;
};

// Compares the serving version and a candidate on inputs the host recorded (e.g. the last second
// of targets), off the control thread. Returns an empty optional when they agree within the host's
// tolerance, else what differed ("target 17: joint 3 differs by 0.2 rad"). It runs on a thread
// of its own under SwapDeadlines::shadow and, past that, may still run after swap() returned:
// what it captures must outlive it (capture by value or shared ownership).
using ShadowCheck =
    std::function<std::optional<std::string>(const ServedVersion &serving, const ServedVersion &candidate)>;

// How long a swap waits for each call into plugin code (and for the host's shadow check) before
// it gives up on the version it was preparing. Each such call runs on a thread of its own; on
// expiry the swap throws SwapError (ErrorKind::timeout, step() the step, deadline(), the message naming
// the plugin, the deadline and the option to raise), the serving version keeps serving, and the
// version whose call did not return is quarantined: never served, and never destroyed or
// unloaded while the call may still run. swap() and collect() retire it (deactivate, destroy,
// unload, under `retire`) once the call has returned; one that never returns stays mapped for the
// process's life. A value of 0 or less is no deadline: the call runs on the swapping thread and
// the swap waits for as long as it takes.
struct SwapDeadlines {
  std::chrono::milliseconds create{10000};    // the plugin's create
  std::chrono::milliseconds activate{10000};  // activate(device, max_batch)
  std::chrono::milliseconds selftest{5000};   // kiln.selftest/1 run
  std::chrono::milliseconds shadow{5000};     // SwapRequest::shadow (host code calling both versions)
  std::chrono::milliseconds state{5000};      // export_state of the serving version + import_state
  std::chrono::milliseconds retire{5000};     // deactivate + destroy of a version being retired
};

struct SwapOptions {
  std::string consumer;
  std::string name;
  std::string interface_id;     // e.g. KILN_IK_INTERFACE_ID
  int device = 0;               // activate's device ordinal; -1: host only
  std::uint32_t max_batch = 1;  // activate's max_batch, the same for every version
  // Where every version runs (ActivateOptions, include/kiln/placement.hpp): a partition of
  // `device`'s SMs, a priority for its streams. A version whose plugin cannot be placed (ABI 1.0,
  // or it left the partition) fails its activate step and is not served.
  std::shared_ptr<const GpuPartition> partition;
  int stream_priority = 0;
  LoadOptions load;             // which device the compatibility check is against, ABI floor
  std::size_t keep_resident = 2;  // versions kept loaded and active, the serving one included (>= 1):
                                  // swapping back to one of them (rollback) loads nothing
  bool carry_state = true;        // export_state -> import_state on every swap
  std::chrono::milliseconds grace_timeout{1000};  // a swap waits this long for the grace period;
                                                  // past it the old version is retired later
  std::size_t max_readers = 64;
  SwapDeadlines deadlines;  // per call into plugin code; see SwapDeadlines
  // Follow cross-process requests (kiln swap, kiln publish, kiln build of consumer/name) on a
  // background thread that polls a shared generation counter (a locked pread of a file in the
  // writable cache per poll; never on a control thread).
  bool watch = false;
  std::chrono::milliseconds watch_interval{20};
  // Called on the watcher thread after each swap it ran: the report, and the error if refused.
  std::function<void(const struct SwapReport &, const Error *)> on_watched_swap;
  // Set by Swappable<Interface>: the smallest table accepted (the interface's first revision).
  std::size_t interface_min_size = 0;
};

struct SwapRequest {
  std::string name;              // another artifact of the consumer; empty: options.name
  // Serve this entry of the consumer (32 hex digits): a resident version, else the entry in the
  // stores whether or not a manifest still names it (Runtime::load_entry). NotFoundError (step
  // "resolve") when no store has it. Empty: what consumer/name resolves to.
  std::string content_key;
  std::optional<Recipe> recipe;  // ensure this recipe (build on miss) and serve what it built
  BuildOptions build;
  ShadowCheck shadow;            // optional
};

struct SwapStep {
  std::string step;  // "resolve", "build", "load", "create", "activate", "selftest", "shadow",
                     // "state", "publish", "grace", "retire"
  double ms = 0;
  std::string detail;  // "passed: 16 targets within 1e-4", "412 bytes carried", "not offered"
};

struct RetiredVersion {
  std::string content_key;
  std::uint64_t serial = 0;
  bool unloaded = false;  // gone from the address space (dlclose'd, checked in /proc/self/maps)
  std::string note;       // why it stays mapped, e.g. "has an .nv_fatbin section (CUDA runtime)"
};

struct SwapReport {
  bool swapped = false;  // false: the requested version was already serving (nothing changed)
  std::string from_key;  // content keys
  std::string to_key;
  std::uint64_t serial = 0;  // of the version now serving
  bool was_resident = false;  // the new version was already loaded (a rollback target)
  std::vector<SwapStep> steps;
  std::size_t state_bytes = 0;
  std::vector<RetiredVersion> retired;
  std::size_t retire_pending = 0;  // old versions still waiting for a reader's quiescent point
  // Versions kept aside because a call into them did not return within its deadline (this swap's
  // or an earlier one's): retired once that call returns (SwapDeadlines).
  std::size_t quarantined = 0;
  // The readers that did not pass a quiescent point within grace_timeout: "reader 3 (thread
  // 4242)"; one whose thread has exited with the reader online says so (it holds every later
  // grace period back until its SwapReader is destroyed or put offline).
  std::vector<std::string> held_back_by;
  double total_ms = 0;             // request to the new version serving
};

// A swap that did not happen: the serving version still serves. kind() is the failing step's
// error kind (AbiError for a failed self-test or state import, IntegrityError, BuildError ...);
// a plugin call past its deadline (SwapDeadlines) is ErrorKind::timeout and timed_out().
class SwapError : public Error {
 public:
  SwapError(ErrorKind kind, const std::string &message, std::string step, SwapReport report,
            std::chrono::milliseconds deadline = std::chrono::milliseconds(0))
      : Error(kind, message), step_(std::move(step)), report_(std::move(report)), deadline_(deadline) {}
  const std::string &step() const noexcept { return step_; }  // "selftest", "state", ...
  const SwapReport &report() const noexcept { return report_; }
  // The step's plugin call did not return within deadline() (SwapDeadlines): its version is
  // quarantined (SwapReport::quarantined).
  bool timed_out() const noexcept { return deadline_.count() > 0; }
  std::chrono::milliseconds deadline() const noexcept { return deadline_; }

 private:
  std::string step_;
  SwapReport report_;
  std::chrono::milliseconds deadline_;
};

// The untyped engine behind Swappable<Interface> (src/swap).
class SwapCore {
 public:
  // [setup-thread] Loads and serves the version consumer/name resolves to now (same transaction
  // as a swap, minus state). Throws SwapError when it cannot serve.
  SwapCore(Runtime &runtime, SwapOptions options);
  // Stops the watcher, waits for a swap in flight, publishes the retired state (acquire() returns
  // a Serving that is false), waits up to grace_timeout for readers to pass a quiescent point or
  // go offline, and retires every version.
  ~SwapCore();
  SwapCore(const SwapCore &) = delete;
  SwapCore &operator=(const SwapCore &) = delete;

  SwapReader register_reader();  // [setup-thread] throws UsageError past max_readers
  // [control-thread: real-time safe] one acquire load, through the reader (never this object).
  // The reader must be online and registered here (checked in debug builds). Once destruction
  // began it returns the retired state: table and instance null, serial 0.
  const ServedVersion &acquire(const SwapReader &reader) const noexcept;

  // [setup-thread] Swaps are serialized: a second caller waits for the first. Called on a thread
  // whose reader is online, that reader goes offline for the grace period and online after, as
  // urcu-qsbr's synchronize_rcu: the swap is a quiescent point for it (hold nothing across it).
  SwapReport swap(const SwapRequest &request = {});
  SwapReport rollback();  // back to the previous resident version; NotFoundError when none
  std::vector<ServedVersion> resident() const;  // serving first
  // Retire versions whose grace period has passed since, and quarantined versions whose stuck
  // call has returned (returns how many are still pending or quarantined). Never waits for a
  // stuck call.
  std::size_t collect();

 private:
  struct Impl;
  std::unique_ptr<Impl> impl_;
};

// ---- The cross-process trigger (kiln swap): ask the processes watching consumer/name
// (SwapOptions::watch) to swap, and read what they answered. No server: a generation counter
// and the watchers' records in <writable cache>/swap/generations (src/swap/generations.hpp).

struct SwapAcknowledgement {
  std::int64_t pid = 0;
  // false: the watcher runs in another pid namespace (another container sharing the store):
  // its pid is that namespace's and whether it still runs cannot be told from here.
  bool same_pid_namespace = true;
  std::uint64_t generation = 0;  // the newest generation it handled
  std::string outcome;           // "watching" (nothing handled yet), "swapped", "unchanged", "refused"
  int exit_code = 0;             // of a refusal: its ErrorKind (docs/cli.md "Exit codes"), else 0
  std::string note;              // the swap's to-key, or the refusal's reason (truncated to 120 bytes)
};

struct SwapRequestResult {
  std::string consumer;
  std::string name;
  std::optional<std::string> content_key;  // what was asked for; nullopt: what the name resolves to
  std::uint64_t generation = 0;            // the generation this request made
  std::string table_file;                  // <writable cache>/swap/generations
  std::vector<SwapAcknowledgement> acknowledged;  // watchers that handled it (or a later one; for a
                                                  // content_key, a later one serving that key)
  // For a content_key: watchers past the request that did not serve it -- a later request
  // replaced it before they looked (requests coalesce), or they started after it.
  std::vector<SwapAcknowledgement> not_serving;
  std::vector<SwapAcknowledgement> pending;       // watchers of this pid namespace that have not yet
  std::vector<SwapAcknowledgement> foreign;       // of other pid namespaces, not yet at it (maybe gone)
};

// Bumps consumer/name's generation, asking for content_key when given (checked first: an entry
// of the consumer in the stores, else NotFoundError; a bad key is a UsageError). Returns at once
// with the watchers' records as they are. IoError when there is no trigger (no writable cache,
// the table full).
SwapRequestResult request_swap(Runtime &runtime, const std::string &consumer, const std::string &name,
                               const std::optional<std::string> &content_key = std::nullopt);
// Re-reads the watchers' records until none of this pid namespace is pending, or `wait` passed;
// returns true when none is pending.
bool wait_for_acknowledgements(Runtime &runtime, SwapRequestResult &result, std::chrono::milliseconds wait);

template <class Interface>
class Swappable {
 public:
  Swappable(Runtime &runtime, SwapOptions options) : core_(runtime, with_size(std::move(options))) {}

  SwapReader register_reader() { return core_.register_reader(); }
  // [control-thread: real-time safe] Valid until this reader's next quiescent() or offline().
  Serving<Interface> acquire(const SwapReader &reader) const noexcept {
    const ServedVersion &v = core_.acquire(reader);
    return {static_cast<const Interface *>(v.table), v.instance, v.serial};
  }
  SwapReport swap(const SwapRequest &request = {}) { return core_.swap(request); }
  SwapReport rollback() { return core_.rollback(); }
  std::vector<ServedVersion> resident() const { return core_.resident(); }
  std::size_t collect() { return core_.collect(); }

 private:
  static SwapOptions with_size(SwapOptions options) {
    if (options.interface_min_size == 0) options.interface_min_size = sizeof(Interface);
    return options;
  }
  SwapCore core_;
};

}  // namespace kiln
