// When an entry of the writable cache was last used, for kiln gc: consumers/<c>/used/<key>, an
// empty file whose mtime is the last use. A load touches it only when it is a day old or more
// (and each process asks at most once per entry: Runtime::State remembers), so loads do not
// write on every call and a read-only or full cache only loses the record, never the load.
#pragma once

#include <chrono>
#include <ctime>
#include <optional>
#include <string>

#include "store/layout.hpp"

namespace kiln::store {

namespace fs = boost::filesystem;

inline constexpr std::chrono::hours kUseRecordGranularity{24};

fs::path use_marker(const ConsumerLayout &layout, const std::string &content_key);
// Creates or touches the marker when it is older than kUseRecordGranularity. Never throws.
void record_use(const ConsumerLayout &layout, const std::string &content_key) noexcept;
// The marker's mtime; nullopt when there is none.
std::optional<std::time_t> recorded_use(const ConsumerLayout &layout, const std::string &content_key);

}  // namespace kiln::store
