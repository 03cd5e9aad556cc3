// kiln.Runtime and kiln.Recipe: stores, devices, resolve, load, publish, list, plan/build/ensure.
//
// The GIL is released around everything that touches the disk, the driver or a compiler, so
// other Python threads run meanwhile (kiln::Runtime is safe to share between threads). Builds
// run on a worker thread while the calling thread waits with the GIL released and checks for
// signals every 50 ms: Ctrl-C cancels the build (kiln::CancelToken: nvcc's process group is
// killed, the staging directory removed) and raises KeyboardInterrupt once it has stopped.
#include <chrono>
#include <exception>
#include <future>
#include <memory>
#include <optional>
#include <thread>
#include <utility>

#include <pybind11/functional.h>
#include <pybind11/stl.h>

#include <kiln/bundle.hpp>
#include <kiln/cancel.hpp>
#include <kiln/gc.hpp>
#include <kiln/json.hpp>
#include <kiln/keys.hpp>
#include <kiln/recipe.hpp>
#include <kiln/remote.hpp>
#include <kiln/runtime.hpp>
#include <kiln/store.hpp>
#include <kiln/toolchain.hpp>
#include <kiln/verify.hpp>
#include <kiln/version.hpp>

#include "bindings.hpp"
#include "convert.hpp"
#include "errors.hpp"

namespace kiln::python {

namespace {

bool interpreter_running() {
#if PY_VERSION_HEX >= 0x030D0000
  return Py_IsInitialized() != 0 && Py_IsFinalizing() == 0;
#else
  return Py_IsInitialized() != 0 && _Py_IsFinalizing() == 0;
#endif
}

// A Python callable kept by C++ code that may drop it on any thread (kiln keeps the log
// callback in state a loaded Module can outlive the Runtime with): the last owner takes the
// GIL to release it, or leaks it once Python is finalizing.
struct PyCallable {
  explicit PyCallable(py::object f) : fn(std::move(f)) {}
  PyCallable(const PyCallable &) = delete;
  PyCallable &operator=(const PyCallable &) = delete;
  ~PyCallable() {
    if (interpreter_running()) {
      py::gil_scoped_acquire gil;
      fn = py::object();
    } else {
      fn.release();
    }
  }
  py::object fn;
};

// log=callable(level: str, message: str), called from whichever thread kiln works on. An
// exception it raises cannot travel back through kiln: it goes to sys.unraisablehook.
LogCallback log_bridge(py::object fn) {
  auto callable = std::make_shared<PyCallable>(std::move(fn));
  return [callable](LogLevel level, const std::string &message) {
    if (!interpreter_running()) return;
    py::gil_scoped_acquire gil;
    try {
      callable->fn(to_string(level), text(message));
    } catch (py::error_already_set &error) {
      error.discard_as_unraisable("kiln.Runtime log callback");
    }
  };
}

// progress=callable(event: dict) during a build. The first exception it raises cancels the
// build and is raised by build()/ensure() once the build stopped.
struct ProgressBridge {
  py::object fn;  // touched only with the GIL held
  CancelToken *token = nullptr;
  std::optional<py::error_already_set> error;

  BuildProgress callback() {
    if (fn.is_none()) return {};
    // A raw pointer, not a py::object copy: the builder may copy and drop the std::function on
    // its threads without the GIL. The bridge outlives the build (it lives in the caller's frame).
    return [self = this](const BuildEvent &event) {
      py::gil_scoped_acquire gil;
      if (self->error) return;
      try {
        self->fn(to_dict(event));
      } catch (py::error_already_set &raised) {
        self->error.emplace(std::move(raised));
        self->token->cancel();
      }
    };
  }
};

// Runs work() on a worker thread; the caller (GIL held on entry) waits with the GIL released,
// checking for signals every 50 ms. A signal handler's exception (KeyboardInterrupt) cancels
// token, waits for the work to stop and is raised; the work's own result or error otherwise.
template <class Work>
auto interruptible(CancelToken &token, Work work) -> decltype(work()) {
  using Result = decltype(work());
  std::packaged_task<Result()> task(std::move(work));
  std::future<Result> done = task.get_future();
  std::thread worker;
  {
    py::gil_scoped_release release;
    worker = std::thread(std::move(task));
  }
  for (;;) {
    bool ready = false;
    {
      py::gil_scoped_release release;
      ready = done.wait_for(std::chrono::milliseconds(50)) == std::future_status::ready;
    }
    if (ready) break;
    if (PyErr_CheckSignals() != 0) {
      py::error_already_set interrupt;  // fetched now: the wait below may run other Python code
      token.cancel();
      {
        py::gil_scoped_release release;
        worker.join();
      }
      throw interrupt;  // the build's own "cancelled" error is dropped
    }
  }
  {
    py::gil_scoped_release release;
    worker.join();
  }
  return done.get();
}

// A recipe argument: a kiln.Recipe, a path (str, bytes, os.PathLike) or a dict. A dict's
// relative paths are taken from base_dir (default: the current directory).
Recipe recipe_argument(const py::handle &recipe, const py::object &base_dir) {
  if (py::isinstance<Recipe>(recipe)) return recipe.cast<Recipe>();
  if (py::isinstance<py::dict>(recipe)) {
    const std::string dir =
        base_dir.is_none() ? fs_path(py::module_::import("os").attr("getcwd")(), "base_dir") : fs_path(base_dir, "base_dir");
    std::string json;
    try {
      json = py::module_::import("json").attr("dumps")(recipe).cast<std::string>();
    } catch (py::error_already_set &error) {
      // A value JSON cannot hold (a set, an object): the recipe is malformed, as for a file.
      throw UsageError("recipe dict: not JSON-serializable (" + std::string(py::str(error.value())) +
                       "); use only dict, list, str, int, float, bool and None");
    }
    return Recipe::parse(json, dir, "dict (base_dir " + dir + ")");  // "recipe dict (...): ..."
  }
  if (is_path_like(recipe)) return Recipe::load(fs_path(recipe, "recipe"));
  throw ArgumentTypeError("recipe: expected a kiln.Recipe, a path or a dict, got " + describe(recipe));
}

BuildOptions build_options(bool force, unsigned jobs, const py::object &archs) {
  BuildOptions options;
  options.force = force;
  options.jobs = jobs;
  options.archs = archs_argument(archs);
  return options;
}

// What build() and ensure() share: parse the recipe, then run(recipe, options) through
// interruptible() with Ctrl-C and progress= wired to the CancelToken. A progress callback's
// exception is raised in place of the build's result or of the "cancelled" error it caused.
template <class Run>
auto cancellable_build(const py::object &recipe, const py::object &base_dir, bool force, unsigned jobs,
                       const py::object &archs, const py::object &progress, Run run) {
  const Recipe parsed = recipe_argument(recipe, base_dir);
  CancelToken token;
  ProgressBridge bridge{progress, &token, std::nullopt};
  BuildOptions options = build_options(force, jobs, archs);
  options.cancel = &token;
  options.progress = bridge.callback();
  std::optional<decltype(run(parsed, options))> result;
  try {
    result.emplace(interruptible(token, [&] { return run(parsed, options); }));
  } catch (...) {
    if (bridge.error) throw std::move(*bridge.error);
    throw;
  }
  if (bridge.error) throw std::move(*bridge.error);
  return std::move(*result);
}

std::unique_ptr<Runtime> make_runtime(const py::object &cache_dir, const py::object &store_path,
                                      const py::object &device, const py::object &log) {
  RuntimeOptions options = RuntimeOptions::from_environment();
  if (!cache_dir.is_none()) options.cache_dir = fs_path(cache_dir, "cache_dir");
  if (!store_path.is_none()) {
    options.read_only_stores.clear();
    if (is_path_like(store_path)) {
      // One string: colon-separated, as KILN_STORE_PATH.
      const std::string joined = fs_path(store_path, "store_path");
      std::size_t start = 0;
      while (start <= joined.size()) {
        const std::size_t end = std::min(joined.find(':', start), joined.size());
        if (end > start) options.read_only_stores.push_back(joined.substr(start, end - start));
        start = end + 1;
      }
    } else {
      for (const py::handle item : store_path) options.read_only_stores.push_back(fs_path(item, "store_path"));
    }
  }
  if (!device.is_none()) options.declared_device = argument<std::string>(device, "device", "a device declaration such as \"sm_90\" (str)");
  if (!log.is_none()) options.log = log_bridge(log);
  py::gil_scoped_release release;  // the constructor reads the stores
  return std::make_unique<Runtime>(std::move(options));
}

// work() with the GIL released, its JSON result as Python values.
template <class Work>
py::object released(Work work) {
  nlohmann::json result;
  {
    py::gil_scoped_release release;
    result = work();
  }
  return from_json(result);
}

// doctor()'s remotes: what remote_status() says, or {'error': why} for a configuration a build
// would refuse (doctor reports; it does not raise).
py::dict remotes_report(const Runtime &runtime) {
  std::optional<RemoteStatus> status;
  std::string error;
  {
    py::gil_scoped_release release;
    try {
      status = runtime.remote_status();
    } catch (const Error &refused) {
      error = refused.what();
    }
  }
  if (status) return from_json(kiln::to_json(*status));
  py::dict out;
  out["error"] = text(error);
  return out;
}

}  // namespace

void bind_runtime(py::module_ &m) {
  m.def(
      "generate_keypair",
      [](const py::object &path) {
        const KeyPair pair = generate_keypair(fs_path(path, "path"));
        py::dict out;
        out["secret_file"] = text(pair.secret_file);
        out["public_file"] = text(pair.public_file);
        out["key_id"] = text(pair.key_id);
        return out;
      },
      py::arg("path"),
      "A new Ed25519 key pair for signing bundles, as `kiln keygen`: PATH.key (secret, mode 0600) and PATH.pub; "
      "{secret_file, public_file, key_id}. kiln.UsageError when either exists (a key is never overwritten).");
  const auto edit_of = [](const py::object &file, const py::object &root, const std::string &expires) {
    KeyListEdit edit;
    edit.file = fs_path(file, "file");
    edit.root_key = fs_path(root, "root");
    edit.expires = expires;
    return edit;
  };
  m.def(
      "key_list_init",
      [edit_of](const py::object &file, const py::object &root, const std::string &expires) {
        const KeyListEdit edit = edit_of(file, root, expires);  // Python objects are read with the GIL held
        return released([&] { return kiln::to_json(create_key_list(edit)); });
      },
      py::arg("file"), py::kw_only(), py::arg("root"), py::arg("expires") = "",
      "Generation 1 of a key list signed by root (a PATH.key), as `kiln key init`: {file, generation, roots, keys "
      "...}.");
  m.def(
      "key_list_add",
      [edit_of](const py::object &file, const py::object &root, const py::object &key,
                const std::vector<std::string> &roles, const std::vector<std::string> &consumers,
                const std::string &name, const std::string &key_expires, const std::string &expires) {
        AddKeyRequest request;
        request.edit = edit_of(file, root, expires);
        request.public_key = fs_path(key, "key");
        request.roles = roles;
        request.consumers = consumers;
        request.name = name;
        request.key_expires = key_expires;
        return released([&] { return kiln::to_json(add_key(request)); });
      },
      py::arg("file"), py::kw_only(), py::arg("root"), py::arg("key"), py::arg("roles"),
      py::arg("consumers") = std::vector<std::string>{}, py::arg("name") = "", py::arg("key_expires") = "",
      py::arg("expires") = "",
      "Allow key (a PATH.pub) to sign for roles ('build', 'release') and consumers (default all), as `kiln key add`.");
  m.def(
      "key_list_revoke",
      [edit_of](const py::object &file, const py::object &root, const std::string &key_id, const std::string &at,
                bool all, const std::string &reason, const std::string &expires) {
        RevokeKeyRequest request;
        request.edit = edit_of(file, root, expires);
        request.key_id = key_id;
        request.at = at;
        request.all = all;
        request.reason = reason;
        return released([&] { return kiln::to_json(revoke_key(request)); });
      },
      py::arg("file"), py::kw_only(), py::arg("root"), py::arg("key_id"), py::arg("at") = "", py::arg("all") = false,
      py::arg("reason") = "", py::arg("expires") = "",
      "Refuse what key_id signed from `at` (a UTC time; default now), or everything (all=True), as `kiln key revoke`.");
  m.def(
      "key_list_rotate_root",
      [edit_of](const py::object &file, const py::object &root, const py::object &new_root,
                const std::string &expires) {
        const KeyListEdit edit = edit_of(file, root, expires);
        const std::string next = fs_path(new_root, "new_root");
        return released([&] { return kiln::to_json(rotate_root(edit, next)); });
      },
      py::arg("file"), py::kw_only(), py::arg("root"), py::arg("new_root"), py::arg("expires") = "",
      "Hand the list to new_root (a PATH.key), endorsed by root, as `kiln key rotate-root`.");
  m.def(
      "read_key_list",
      [](const py::object &file) {
        const std::string path = fs_path(file, "file");
        return released([&] { return kiln::to_json(read_key_list(path)); });
      },
      py::arg("file"), "A key list file, checked for consistency, as `kiln key list FILE`.");
  py::class_<Recipe>(m, "Recipe",
                     "A parsed, validated recipe (docs/recipes.md). Runtime.plan/build/ensure also take "
                     "a path or a dict directly.")
      .def_static(
          "load", [](const py::object &path) { return Recipe::load(fs_path(path, "path")); }, py::arg("path"),
          "Parse a recipe file; relative paths are taken from its directory.")
      .def_static(
          "from_dict",
          [](const py::dict &recipe, const py::object &base_dir) { return recipe_argument(recipe, base_dir); },
          py::arg("recipe"), py::arg("base_dir") = py::none(),
          "Parse a recipe given as a dict; relative paths are taken from base_dir (default: the current directory).")
      .def_property_readonly("consumer", [](const Recipe &r) { return text(r.consumer); })
      .def_property_readonly("name", [](const Recipe &r) { return text(r.name); })
      .def_property_readonly("backend", [](const Recipe &r) { return text(r.backend); })
      .def_property_readonly("artifact", [](const Recipe &r) { return text(r.artifact); })
      .def_property_readonly("archs", [](const Recipe &r) { return r.archs; })
      .def_property_readonly("base_dir", [](const Recipe &r) { return text(r.base_dir); })
      .def_property_readonly("file", [](const Recipe &r) { return text(r.file); })
      .def("canonical_json", [](const Recipe &r) { return text(r.canonical_json()); },
           "The recipe as JSON with paths relative to base_dir: the form that keys the input key.")
      .def("__repr__", [](const Recipe &r) {
        return text("<kiln.Recipe " + r.consumer + "/" + r.name + " (" + r.backend + ") from " + r.file + ">");
      });

  py::class_<Runtime>(m, "Runtime",
                      "Stores and devices from the environment (KILN_CACHE_DIR, KILN_STORE_PATH, KILN_DEVICE ...); "
                      "keyword arguments override them. log=callable(level, message) receives kiln's log.")
      .def(py::init(&make_runtime), py::kw_only(), py::arg("cache_dir") = py::none(),
           py::arg("store_path") = py::none(), py::arg("device") = py::none(), py::arg("log") = py::none())
      .def(
          "stores",
          [](const Runtime &runtime) {
            py::list out;
            for (const auto &store : runtime.stores()) out.append(to_dict(store));
            return out;
          },
          "The store layers in search order: [{root, writable, origin}], the writable cache last.")
      .def(
          "devices",
          [](const Runtime &runtime) {
            const DeviceReport *report = nullptr;
            {
              py::gil_scoped_release release;  // the first call runs cuInit
              report = &runtime.devices();
            }
            return to_dict(*report);
          },
          "The driver and devices: {state, detail, library, driver_version, devices, declared, effective}.")
      .def(
          "toolchain",
          [](const Runtime &runtime) {
            std::optional<ToolchainReport> report;
            {
              py::gil_scoped_release release;
              report = runtime.toolchain();
            }
            return to_dict(*report);
          },
          "The build toolchain, found as a build finds it: nvcc, host compiler, cmake, NVRTC ...")
      .def(
          "doctor",
          [](const Runtime &runtime) {
            const DeviceReport *devices = nullptr;
            std::optional<ToolchainReport> toolchain;
            {
              py::gil_scoped_release release;
              devices = &runtime.devices();
              toolchain = runtime.toolchain();
            }
            py::dict out;
            out["version"] = kVersion;
            out["abi_version"] = std::to_string(KILN_ABI_VERSION_MAJOR) + "." + std::to_string(KILN_ABI_VERSION_MINOR);
            out["devices"] = to_dict(*devices);
            py::list stores;
            for (const auto &store : runtime.stores()) stores.append(to_dict(store));
            out["stores"] = stores;
            out["toolchain"] = to_dict(*toolchain);
            out["remotes"] = remotes_report(runtime);
            return out;
          },
          "What `kiln doctor` reports: version, devices, stores, toolchain, remotes (each asked for a round trip; "
          "a configuration builds would refuse is {'error': message} here, not an exception).")
      .def(
          "resolve",
          [](const Runtime &runtime, const std::string &consumer, const std::string &name) {
            std::optional<Resolution> resolution;
            {
              py::gil_scoped_release release;
              resolution = runtime.resolve(consumer, name);
            }
            return to_dict(*resolution);
          },
          py::arg("consumer"), py::arg("name"),
          "Where consumer/name is found and what its entry records (runs none of its code).")
      .def(
          "load",
          [](const Runtime &runtime, const std::string &consumer, const std::string &name, int device,
             const std::optional<std::string> &content_key, const std::string &model_fingerprint,
             const std::string &model_text) {
            LoadOptions options;
            options.device = device;
            options.model = {model_fingerprint, model_text};
            py::gil_scoped_release release;
            if (content_key) return runtime.load_entry(consumer, name, *content_key, options);
            return runtime.load(consumer, name, options);
          },
          py::arg("consumer"), py::arg("name"), py::arg("device") = -1, py::kw_only(),
          py::arg("content_key") = py::none(), py::arg("model_fingerprint") = "", py::arg("model_text") = "",
          "Resolve, check against the device (-1: the first), verify, dlopen and bind: a kiln.Module. "
          "content_key= loads that entry of the consumer even when no manifest names it. model_fingerprint= "
          "(\"xxh128:...\", as kiln-urdf-fk --check prints it) refuses a plugin generated from another robot model "
          "(kiln.IncompatibleError); model_text= (--check --model-text) lets the refusal name the first differing "
          "link or joint.")
      .def(
          "publish",
          [](Runtime &runtime, const std::string &consumer, const std::string &name, const py::object &artifact,
             const py::object &archs, int cuda_toolkit, const std::map<std::string, std::string> &provenance) {
            PublishRequest request;
            request.consumer = consumer;
            request.name = name;
            request.artifact_file = fs_path(artifact, "artifact");
            publish_archs(request, archs);
            request.cuda_toolkit_version = cuda_toolkit;
            request.provenance = provenance;
            std::optional<PublishResult> result;
            {
              py::gil_scoped_release release;
              result = runtime.publish(request);
            }
            return to_dict(*result);
          },
          py::arg("consumer"), py::arg("name"), py::arg("artifact"), py::arg("archs") = py::none(), py::kw_only(),
          py::arg("cuda_toolkit") = 0, py::arg("provenance") = std::map<std::string, std::string>{},
          "Put a prebuilt plugin file into the writable cache as consumer/name. archs: what its device code "
          "targets ('sm_90,sm_87' or a list; 'none': host-only, refusing a file with device code), each held by the file (else IntegrityError listing what it "
          "holds); None: the archs the file holds (host-only for a file without device code). Returns "
          "{content_key, entry, file, reused}.")
      .def(
          "list",
          [](const Runtime &runtime, const std::string &consumer) {
            std::vector<ArtifactSummary> items;
            {
              py::gil_scoped_release release;
              items = runtime.list(consumer);
            }
            py::list out;
            for (const auto &item : items) out.append(to_dict(item));
            return out;
          },
          py::arg("consumer") = "", "Every artifact of consumer (all when empty), in store order, as `kiln ls`.")
      .def(
          "plan",
          [](const Runtime &runtime, const py::object &recipe, const py::object &archs, const py::object &base_dir) {
            const Recipe parsed = recipe_argument(recipe, base_dir);
            const BuildOptions options = build_options(false, 0, archs);
            std::optional<BuildPlan> plan;
            {
              py::gil_scoped_release release;
              plan = runtime.plan(parsed, options);
            }
            return to_dict(*plan);
          },
          py::arg("recipe"), py::kw_only(), py::arg("archs") = py::none(), py::arg("base_dir") = py::none(),
          "What a build would do, without side effects: state 'cached', 'stale' (with stale_reasons) or 'missing'.")
      .def(
          "build",
          [](Runtime &runtime, const py::object &recipe, bool force, unsigned jobs, const py::object &archs,
             const py::object &progress, const py::object &base_dir) {
            return to_dict(cancellable_build(recipe, base_dir, force, jobs, archs, progress,
                                             [&](const Recipe &parsed, const BuildOptions &options) {
                                               return runtime.build(parsed, options);
                                             }));
          },
          py::arg("recipe"), py::kw_only(), py::arg("force") = false, py::arg("jobs") = 0u,
          py::arg("archs") = py::none(), py::arg("progress") = py::none(), py::arg("base_dir") = py::none(),
          "Build on miss, at most once across processes, into the writable cache: {outcome: hit|reused|built, "
          "content_key, entry, archs, units, seconds ...}. Ctrl-C cancels it.")
      .def(
          "ensure",
          [](Runtime &runtime, const py::object &recipe, bool force, unsigned jobs, const py::object &archs,
             int device, const py::object &progress, const py::object &base_dir) {
            LoadOptions load_options;
            load_options.device = device;
            return cancellable_build(recipe, base_dir, force, jobs, archs, progress,
                                     [&](const Recipe &parsed, const BuildOptions &options) {
                                       return runtime.ensure(parsed, options, load_options);
                                     });
          },
          py::arg("recipe"), py::kw_only(), py::arg("force") = false, py::arg("jobs") = 0u,
          py::arg("archs") = py::none(), py::arg("device") = -1, py::arg("progress") = py::none(),
          py::arg("base_dir") = py::none(),
          "build() if needed, then load what was built (without a toolchain: the prepared artifact of the "
          "recipe's consumer/name). Returns a kiln.Module.")
      .def(
          "remote_status",
          [](const Runtime &runtime) { return released([&] { return kiln::to_json(runtime.remote_status()); }); },
          "The remote caches (docs/remote-cache.md), each asked for a round trip, as "
          "`kiln remote status`: {config_file, remotes: [{url, read_only, state, detail, round_trip_ms ...}], "
          "trusted_keys, signing_key}. kiln.UsageError for a malformed configuration.")
      .def(
          "remote_push",
          [](const Runtime &runtime, const std::string &consumer, const std::vector<std::string> &names) {
            return released([&] {
              nlohmann::json transfers = nlohmann::json::array();
              for (const auto &transfer : runtime.remote_push(consumer, names)) transfers.push_back(kiln::to_json(transfer));
              return transfers;
            });
          },
          py::arg("consumer"), py::arg("names") = std::vector<std::string>{},
          "Upload artifacts of consumer (names: default every one) to every read-write remote, as `kiln remote "
          "push`: [{consumer, name, content_key, remote, status, bytes}]; a remote that failed is a transfer whose "
          "status starts with 'failed', not an exception. kiln.UsageError when no remote is configured.")
      .def(
          "verify",
          [](const Runtime &runtime, const py::object &store_dir, bool repair) {
            VerifyOptions options;
            if (!store_dir.is_none()) options.store_dir = fs_path(store_dir, "store_dir");
            options.repair = repair;
            return released([&] { return kiln::to_json(runtime.verify(options)); });
          },
          py::kw_only(), py::arg("store_dir") = py::none(), py::arg("repair") = false,
          "Check every store (or store_dir) as `kiln verify`: {findings: [{kind, severity, path, detail, repair, "
          "repaired}], damage_left, clean, entries, bytes ...}. Damage is reported, not raised; repair=True repairs "
          "what can be repaired in writable stores.")
      .def(
          "gc",
          [](const Runtime &runtime, const py::object &max_size, const py::object &older_than, bool include_named,
             bool dry_run) {
            GcOptions options;
            if (!max_size.is_none()) {
              options.max_bytes = py::isinstance<py::str>(max_size) ? parse_size(max_size.cast<std::string>())
                                                                    : argument<std::uint64_t>(max_size, "max_size", "bytes (int) or a size such as \"20G\"");
            }
            if (!older_than.is_none()) options.older_than = parse_age(argument<std::string>(older_than, "older_than", "an age such as \"30d\" (str)"));
            options.include_named = include_named;
            options.dry_run = dry_run;
            auto out = released([&] { return kiln::to_json(runtime.gc(options)); });
            out["dry_run"] = dry_run;
            return out;
          },
          py::kw_only(), py::arg("max_size") = py::none(), py::arg("older_than") = py::none(),
          py::arg("include_named") = false, py::arg("dry_run") = false,
          "Evict least recently used entries and objects from the writable cache, as `kiln gc`: max_size bytes or "
          "'2G', older_than '30d'; never one in use. {items: [{kind, path, bytes, outcome}], entries_evicted ...}.")
      .def(
          "export_bundle",
          [](const Runtime &runtime, const std::string &consumer, const py::object &output,
             const std::vector<std::string> &names, const py::object &sign, std::uint64_t release,
             const std::string &expires, const py::object &key_list) {
            ExportRequest request;
            request.consumer = consumer;
            request.names = names;
            request.output = fs_path(output, "output");
            if (!sign.is_none()) request.signing_key = fs_path(sign, "sign");
            request.release_version = release;
            request.expires = expires;
            if (!key_list.is_none()) request.key_list = fs_path(key_list, "key_list");
            return released([&] { return kiln::to_json(runtime.export_bundle(request)); });
          },
          py::arg("consumer"), py::arg("output"), py::arg("names") = std::vector<std::string>{}, py::kw_only(),
          py::arg("sign") = py::none(), py::arg("release") = 0u, py::arg("expires") = "",
          py::arg("key_list") = py::none(),
          "Write artifacts of consumer (names: default every one) into one bundle file, as `kiln export` (sign= a "
          "PATH.key of kiln.generate_keypair; release= the release version, default the time in seconds; expires= "
          "'90d' or a UTC time, default a year; key_list= a key list file of `kiln key` to carry): {bundle, entries, "
          "bundle_bytes, signed_by, release_version, expires, key_list_generation}.")
      .def(
          "import_bundle",
          [](Runtime &runtime, const py::object &bundle, const py::object &into, const py::object &trust,
             bool allow_unsigned, bool allow_downgrade, bool allow_expired) {
            ImportRequest request;
            request.bundle = fs_path(bundle, "bundle");
            if (!into.is_none()) request.into = fs_path(into, "into");
            if (!trust.is_none()) {
              if (is_path_like(trust)) {
                request.trusted_keys.push_back(fs_path(trust, "trust"));
              } else {
                for (const py::handle key : trust) request.trusted_keys.push_back(fs_path(key, "trust"));
              }
            }
            request.allow_unsigned = allow_unsigned;
            request.allow_downgrade = allow_downgrade;
            request.allow_expired = allow_expired;
            return released([&] { return kiln::to_json(runtime.import_bundle(request)); });
          },
          py::arg("bundle"), py::kw_only(), py::arg("into") = py::none(), py::arg("trust") = py::none(),
          py::arg("allow_unsigned") = false, py::arg("allow_downgrade") = false, py::arg("allow_expired") = false,
          "Bring a bundle's artifacts in, verified, all or nothing, as `kiln import`: into= a store directory "
          "(default the writable cache), trust= PATH.pub or a list of them: {store_root, entries, signed_by ...}.")
      .def(
          "trust_status",
          [](const Runtime &runtime) { return released([&] { return kiln::to_json(runtime.trust_status()); }); },
          "The root key the stores pin and the newest key list they accepted, as `kiln key list`: {root: {key_id, "
          "file} or None, key_list: {generation, roots, keys: [{key_id, roles, consumers, status ...}]} or None}.")
      .def(
          "trust",
          [](Runtime &runtime, const py::object &root, const py::object &key_list, const py::object &into) {
            TrustRequest request;
            if (!root.is_none()) request.root = fs_path(root, "root");
            if (!key_list.is_none()) request.key_list = fs_path(key_list, "key_list");
            if (!into.is_none()) request.into = fs_path(into, "into");
            return released([&] { return kiln::to_json(runtime.trust(request)); });
          },
          py::kw_only(), py::arg("root") = py::none(), py::arg("key_list") = py::none(), py::arg("into") = py::none(),
          "Pin a root key (root= its PATH.pub) in the writable cache (or into= a store directory) and/or accept a "
          "newer key list signed by it, as `kiln key trust`; returns trust_status()'s form.")
      .def("__repr__", [](const Runtime &runtime) {
        std::string out = "<kiln.Runtime stores:";
        for (const auto &store : runtime.stores()) out += " " + store.root + (store.writable ? " (writable)" : "");
        return text(out + ">");
      });
}

}  // namespace kiln::python
