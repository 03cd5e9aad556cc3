// kiln export: the chosen entries of a consumer, as the stores resolve them, into one bundle.
#pragma once

#include <kiln/bundle.hpp>
#include <kiln/log.hpp>

#include "store/storage.hpp"

namespace kiln::bundle {

ExportReport write_bundle(const store::Storage &storage, const ExportRequest &request, const LogCallback &log);

}  // namespace kiln::bundle
