// Runtime::verify: kiln verify over every store of the runtime, or one store directory.
#include <chrono>

#include <boost/filesystem/operations.hpp>

#include <kiln/runtime.hpp>
#include <kiln/verify.hpp>

#include "load/entry_checks.hpp"
#include "runtime/state.hpp"
#include "store/maintenance/audit.hpp"
#include "store/storage.hpp"
#include "support/typed_errors.hpp"

namespace kiln {

VerifyReport Runtime::verify() const { return verify(VerifyOptions{}); }

VerifyReport Runtime::verify(const VerifyOptions &options) const try {
  const auto start = std::chrono::steady_clock::now();
  VerifyReport report;
  if (!options.store_dir.empty()) {
    namespace fs = boost::filesystem;
    const fs::path root = fs::absolute(fs::path(options.store_dir)).lexically_normal();
    boost::system::error_code error;
    if (!fs::is_directory(root, error)) {
      throw NotFoundError("store directory " + root.string() + " (--store) is not a directory: pass a store root "
                          "(the directory holding consumers/)");
    }
    const store::LocalStore store({store::resolve_store_root(root), true, "verify"});
    store::audit_store(store, options.repair, report, options.on_finding, state_->options.log,
                       load::entry_file_disagreement);
  } else {
    for (const auto &layer : state_->storage->layers()) {
      store::audit_store(*layer, options.repair, report, options.on_finding, state_->options.log,
                         load::entry_file_disagreement);
    }
  }
  report.seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  return report;
} catch (...) {
  support::rethrow_typed("verifying the stores");
}

}  // namespace kiln
