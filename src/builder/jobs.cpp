#include "builder/jobs.hpp"

#include <sched.h>

#include <algorithm>
#include <atomic>
#include <cstdlib>
#include <exception>
#include <fstream>
#include <limits>
#include <mutex>
#include <optional>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

#include <kiln/errors.hpp>

namespace kiln::builder {
namespace {

namespace fs = boost::filesystem;

constexpr unsigned max_jobs = 1024;
constexpr std::uint64_t unknown = std::numeric_limits<std::uint64_t>::max();

std::optional<std::string> read_small(const fs::path &file) {
  std::ifstream in(file.string(), std::ios::binary);
  if (!in) return std::nullopt;
  std::stringstream text;
  text << in.rdbuf();
  if (in.bad()) return std::nullopt;
  return text.str();
}

// A decimal number at the start of `text` (after blanks); nullopt when there is none.
std::optional<std::uint64_t> leading_number(const std::string &text) {
  std::size_t at = text.find_first_not_of(" \t");
  if (at == std::string::npos || text[at] < '0' || text[at] > '9') return std::nullopt;
  std::uint64_t value = 0;
  for (; at < text.size() && text[at] >= '0' && text[at] <= '9'; ++at) {
    const auto digit = static_cast<std::uint64_t>(text[at] - '0');
    if (value > (unknown - digit) / 10) return unknown;  // saturate
    value = value * 10 + digit;
  }
  return value;
}

// "key value" lines (memory.stat) and "Key:   value kB" lines (meminfo).
std::optional<std::uint64_t> field(const std::string &text, const std::string &key) {
  std::istringstream lines(text);
  std::string line;
  while (std::getline(lines, line)) {
    if (line.compare(0, key.size(), key) != 0 || line.size() == key.size()) continue;
    const char after = line[key.size()];
    if (after != ' ' && after != ':' && after != '\t') continue;
    return leading_number(line.substr(key.size() + 1));
  }
  return std::nullopt;
}

std::optional<std::uint64_t> file_number(const fs::path &file) {
  const auto text = read_small(file);
  if (!text) return std::nullopt;
  return leading_number(*text);  // "max" → nullopt: no limit
}

struct CgroupFiles {
  const char *limit;
  const char *usage;
  const char *inactive_key;
};
constexpr CgroupFiles v2_files{"memory.max", "memory.current", "inactive_file"};
constexpr CgroupFiles v1_files{"memory.limit_in_bytes", "memory.usage_in_bytes", "total_inactive_file"};

// What one cgroup directory still allows: its limit less its usage that is not reclaimable
// page cache. unknown when it sets no limit.
std::uint64_t cgroup_allows(const fs::path &dir, const CgroupFiles &files) {
  const auto limit = file_number(dir / files.limit);
  if (!limit || *limit >= (std::uint64_t{1} << 62)) return unknown;  // "max", or v1's "unlimited"
  auto usage = file_number(dir / files.usage);
  if (!usage) return *limit;
  if (const auto stat = read_small(dir / "memory.stat")) {
    if (const auto inactive = field(*stat, files.inactive_key)) *usage -= std::min(*usage, *inactive);
  }
  return *limit - std::min(*limit, *usage);
}

// The smallest allowance of `relative`'s cgroup and its ancestors under `root`.
std::uint64_t hierarchy_allows(const fs::path &root, std::string relative, const CgroupFiles &files) {
  std::uint64_t allows = unknown;
  for (;;) {
    while (!relative.empty() && relative.back() == '/') relative.pop_back();
    allows = std::min(allows, cgroup_allows(relative.empty() ? root : root / relative, files));
    if (relative.empty()) return allows;
    const auto slash = relative.rfind('/');
    relative = slash == std::string::npos ? std::string() : relative.substr(0, slash);
  }
}

std::optional<std::string> cgroup_path(const std::string &self_cgroup, bool v2) {
  std::istringstream lines(self_cgroup);
  std::string line;
  while (std::getline(lines, line)) {
    const auto first = line.find(':');
    const auto second = first == std::string::npos ? std::string::npos : line.find(':', first + 1);
    if (second == std::string::npos) continue;
    const std::string controllers = line.substr(first + 1, second - first - 1);
    const std::string path = line.substr(second + 1);
    if (v2 && line.compare(0, first, "0") == 0 && controllers.empty()) return path;
    if (!v2) {
      std::istringstream names(controllers);
      std::string name;
      while (std::getline(names, name, ',')) {
        if (name == "memory") return path;
      }
    }
  }
  return std::nullopt;
}

std::string relative_path(const std::string &path) {
  const auto start = path.find_first_not_of('/');
  return start == std::string::npos ? std::string() : path.substr(start);
}

unsigned usable_cores() {
  cpu_set_t set;
  CPU_ZERO(&set);
  if (::sched_getaffinity(0, sizeof set, &set) == 0) {
    const int count = CPU_COUNT(&set);
    if (count > 0) return static_cast<unsigned>(count);
  }
  return std::max(1u, std::thread::hardware_concurrency());
}

}  // namespace

unsigned default_jobs() {
  const char *value = ::secure_getenv("KILN_JOBS");
  if (value == nullptr || *value == '\0') return usable_cores();
  const std::string text = value;
  const bool digits = text.find_first_not_of("0123456789") == std::string::npos;
  const auto number = digits ? leading_number(text) : std::nullopt;
  if (!number || *number == 0 || *number > max_jobs) {
    throw UsageError("KILN_JOBS='" + text + "' is not a job count: set it to a whole number from 1 to " +
                     std::to_string(max_jobs) + " (parallel compile jobs), or unset it to use all " +
                     std::to_string(usable_cores()) + " cores");
  }
  return static_cast<unsigned>(*number);
}

std::uint64_t available_memory_bytes(const MemorySources &sources) {
  std::uint64_t available = unknown;
  if (const auto meminfo = read_small(sources.meminfo)) {
    if (const auto kib = field(*meminfo, "MemAvailable")) {
      available = *kib > unknown / 1024 ? unknown : *kib * 1024;
    }
  }
  const auto self = read_small(sources.self_cgroup);
  if (!self) return available;
  if (const auto path = cgroup_path(*self, true)) {
    available = std::min(available, hierarchy_allows(sources.cgroup_root, relative_path(*path), v2_files));
  }
  if (const auto path = cgroup_path(*self, false)) {
    available = std::min(available, hierarchy_allows(sources.cgroup_root / "memory", relative_path(*path), v1_files));
  }
  return available;
}

std::uint64_t available_memory_bytes() { return available_memory_bytes(MemorySources{}); }

unsigned bounded_jobs(unsigned requested, std::uint64_t per_unit_bytes, std::uint64_t available) {
  std::uint64_t jobs = requested;
  if (per_unit_bytes > 0) jobs = std::min(jobs, available / per_unit_bytes);
  return static_cast<unsigned>(std::max<std::uint64_t>(1, jobs));
}

void run_parallel(std::size_t count, unsigned jobs, const std::function<void(std::size_t index)> &task,
                  CancelToken &cancel) {
  if (count == 0) return;
  std::atomic<std::size_t> next{0};
  std::atomic<bool> failed{false};
  std::mutex first_guard;
  std::exception_ptr first;
  const auto fail = [&](std::exception_ptr error) {
    {
      std::lock_guard<std::mutex> lock(first_guard);
      if (!first) first = std::move(error);
    }
    failed.store(true);
    cancel.cancel();
  };
  const auto worker = [&] {
    for (;;) {
      if (failed.load() || cancel.cancelled()) return;
      const std::size_t index = next.fetch_add(1);
      if (index >= count || failed.load() || cancel.cancelled()) return;
      try {
        task(index);
      } catch (...) {
        fail(std::current_exception());
        return;
      }
    }
  };

  const std::size_t workers = std::min<std::size_t>(std::max(1u, jobs), count);
  std::vector<std::thread> threads;
  threads.reserve(workers - 1);
  try {
    for (std::size_t i = 1; i < workers; ++i) threads.emplace_back(worker);
  } catch (...) {
    fail(std::current_exception());  // could not start a thread: stop as for a failed task
  }
  worker();  // the calling thread is one of the workers
  for (auto &thread : threads) thread.join();
  if (first) std::rethrow_exception(first);
}

}  // namespace kiln::builder
