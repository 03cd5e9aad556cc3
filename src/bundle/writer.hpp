// kiln export: the chosen entries of a consumer, as the stores resolve them, into one bundle.
#pragma once

#include <cstdint>

#include <kiln/bundle.hpp>
#include <kiln/log.hpp>

#include "store/storage.hpp"

namespace kiln::bundle {

ExportReport write_bundle(const store::Storage &storage, const ExportRequest &request, const LogCallback &log);

// One entry (the resolution's, recorded under its name and input key) into `output`, signed
// with `signing_key` (a PATH.key) when given, expiring `lifetime_s` after now: what a remote
// cache stores (remote/cache.hpp). The entry's files are checked against their digests first.
ExportReport write_entry_bundle(const Resolution &resolution, const std::string &output, const std::string &signing_key,
                                std::int64_t lifetime_s);

}  // namespace kiln::bundle
