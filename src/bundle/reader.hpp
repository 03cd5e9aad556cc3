// kiln import: a bundle read as a stream, checked member by member, committed only whole.
#pragma once

#include <functional>
#include <string>

#include <kiln/bundle.hpp>
#include <kiln/log.hpp>

#include "store/storage.hpp"

namespace kiln::bundle {

// Imports request.bundle into `target`'s writable store (request.into is the caller's to turn
// into `target`). `changed` is told each consumer/name whose manifest record now names another
// content key (the swap trigger).
ImportReport read_bundle(const store::Storage &target, const ImportRequest &request, const LogCallback &log,
                         const std::function<void(const std::string &consumer, const std::string &name)> &changed);

}  // namespace kiln::bundle
