// How many compile jobs to run at once, and running them.
//
// Real solver translation units take 7-11 GB each in nvcc, so parallelism is bounded by memory
// as well as by cores: jobs = bounded_jobs(default_jobs(), per_unit, available_memory_bytes()).
#pragma once

#include <cstddef>
#include <cstdint>
#include <functional>

#include <boost/filesystem/path.hpp>

#include "builder/process.hpp"

namespace kiln::builder {

// KILN_JOBS when set and not empty (a positive integer, else UsageError naming it), else the
// cores this process may run on (its CPU affinity mask), at least 1.
unsigned default_jobs();

// Bytes of memory this process can still use: /proc/meminfo MemAvailable, lowered to what the
// process's memory cgroup (v2 memory.max, or v1 memory.limit_in_bytes, including ancestors)
// still allows beyond its current non-reclaimable use. UINT64_MAX when nothing is known.
std::uint64_t available_memory_bytes();

// Where available_memory_bytes() reads; tests point it at a fake tree.
struct MemorySources {
  boost::filesystem::path meminfo = "/proc/meminfo";
  boost::filesystem::path self_cgroup = "/proc/self/cgroup";
  boost::filesystem::path cgroup_root = "/sys/fs/cgroup";  // v2 here; v1 under <root>/memory
};
std::uint64_t available_memory_bytes(const MemorySources &sources);

// max(1, min(requested, available / per_unit_bytes)); per_unit_bytes 0 means no memory bound.
unsigned bounded_jobs(unsigned requested, std::uint64_t per_unit_bytes, std::uint64_t available);

// Runs task(0) .. task(count-1), at most `jobs` at once (jobs 0 counts as 1), and returns when
// all started tasks have finished. With jobs == 1 the tasks run in index order on the calling
// thread. A task should watch `cancel` (run_process does, given it). When a task throws,
// the token is cancelled, no further task starts, running ones are waited for, and the first
// exception is rethrown (later ones are dropped). When the token is cancelled by someone else
// (Ctrl-C), no further task starts and run_parallel returns normally: the caller checks
// cancel.cancelled().
void run_parallel(std::size_t count, unsigned jobs, const std::function<void(std::size_t index)> &task,
                  CancelToken &cancel);

}  // namespace kiln::builder
