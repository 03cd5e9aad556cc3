// A fixed set of worker threads for the benches' all-cores CPU baselines: the threads are started
// once, outside any timing, so a timed pass pays a wake-up, not thread creation (about 20-50 us a
// thread, which would be a tenth of a 1024-target pass over 16 cores).
//
//   ThreadPool pool(std::thread::hardware_concurrency());
//   pool.run([&](unsigned worker) { ... });   // every worker once, returns when all are done
//   for_each_chunk(pool, count, 64, [&](unsigned worker, size_t begin, size_t end) { ... });
#pragma once

#include <algorithm>
#include <atomic>
#include <condition_variable>
#include <cstddef>
#include <functional>
#include <mutex>
#include <thread>
#include <vector>

namespace kiln_bench {

class ThreadPool {
 public:
  explicit ThreadPool(unsigned threads) {
    threads = std::max(1u, threads);
    for (unsigned i = 0; i < threads; ++i) workers_.emplace_back([this, i] { loop(i); });
  }
  ~ThreadPool() {
    {
      std::lock_guard<std::mutex> lock(mutex_);
      stop_ = true;
    }
    wake_.notify_all();
    for (std::thread &t : workers_) t.join();
  }
  ThreadPool(const ThreadPool &) = delete;
  ThreadPool &operator=(const ThreadPool &) = delete;

  unsigned size() const { return static_cast<unsigned>(workers_.size()); }

  // Runs job(worker) on every worker; returns when all have returned.
  void run(const std::function<void(unsigned)> &job) {
    std::unique_lock<std::mutex> lock(mutex_);
    job_ = &job;
    pending_ = size();
    ++generation_;
    wake_.notify_all();
    done_.wait(lock, [this] { return pending_ == 0; });
    job_ = nullptr;
  }

 private:
  void loop(unsigned index) {
    unsigned long long seen = 0;
    for (;;) {
      const std::function<void(unsigned)> *job = nullptr;
      {
        std::unique_lock<std::mutex> lock(mutex_);
        wake_.wait(lock, [&] { return stop_ || generation_ != seen; });
        if (stop_) return;
        seen = generation_;
        job = job_;
      }
      (*job)(index);
      std::lock_guard<std::mutex> lock(mutex_);
      if (--pending_ == 0) done_.notify_one();
    }
  }

  std::vector<std::thread> workers_;
  std::mutex mutex_;
  std::condition_variable wake_, done_;
  const std::function<void(unsigned)> *job_ = nullptr;
  unsigned pending_ = 0;
  unsigned long long generation_ = 0;
  bool stop_ = false;
};

// [0, count) in chunks of `chunk`, handed out dynamically (solve times differ per item).
inline void for_each_chunk(ThreadPool &pool, std::size_t count, std::size_t chunk,
                           const std::function<void(unsigned, std::size_t, std::size_t)> &body) {
  std::atomic<std::size_t> next{0};
  pool.run([&](unsigned worker) {
    for (;;) {
      const std::size_t begin = next.fetch_add(chunk);
      if (begin >= count) return;
      body(worker, begin, std::min(count, begin + chunk));
    }
  });
}

}  // namespace kiln_bench
