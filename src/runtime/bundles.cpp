// Runtime::export_bundle / import_bundle: the stores this Runtime sees, or an --into directory.
#include <unistd.h>

#include <boost/filesystem/operations.hpp>

#include <kiln/bundle.hpp>
#include <kiln/runtime.hpp>

#include "bundle/reader.hpp"
#include "bundle/writer.hpp"
#include "runtime/state.hpp"
#include "files/files.hpp"
#include "store/layout.hpp"
#include "support/typed_errors.hpp"

namespace kiln {
namespace {

// A refused import into a directory it created leaves no directory behind either: the empty
// consumers/<c>/store skeleton staging made is removed bottom-up with rmdir, which removes
// nothing that holds a file (a concurrent writer's staging stays).
void remove_empty_skeleton(const boost::filesystem::path &root) {
  boost::system::error_code error;
  const auto consumers = root / "consumers";
  for (boost::filesystem::directory_iterator it(consumers, error), end; !error && it != end; it.increment(error)) {
    ::rmdir((it->path() / "store").c_str());
    ::rmdir(it->path().c_str());
  }
  ::rmdir(consumers.c_str());
  ::rmdir(root.c_str());
}

}  // namespace

ExportReport Runtime::export_bundle(const ExportRequest &request) const try {
  return bundle::write_bundle(*state_->storage, request, state_->options.log);
} catch (...) {
  support::rethrow_typed("exporting " + request.consumer + " to the bundle " + request.output);
}

ImportReport Runtime::import_bundle(const ImportRequest &request) try {
  if (request.into.empty()) {
    return bundle::read_bundle(*state_->storage, request, state_->options.log,
                               [this](const std::string &consumer, const std::string &name) {
                                 state_->bump_generation(consumer, name);
                               });
  }
  // A directory that is not a store yet becomes one: its root, written with the same staging
  // + commit protocol as the writable cache (then shipped as a read-only layer, KILN_STORE_PATH).
  const store::fs::path root = store::resolve_store_root(boost::filesystem::absolute(request.into));
  boost::system::error_code error;
  const bool fresh = !boost::filesystem::exists(root, error);
  files::create_directories(root);
  const store::Storage into({store::StoreLocation{root, true, "--into"}});
  try {
    return bundle::read_bundle(into, request, state_->options.log, nullptr);
  } catch (...) {
    if (fresh) remove_empty_skeleton(root);
    throw;
  }
} catch (...) {
  support::rethrow_typed("importing the bundle " + request.bundle);
}

}  // namespace kiln
