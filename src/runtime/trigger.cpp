// Runtime's side of the cross-process swap trigger: every commit that changed what the writable
// manifest names for consumer/name (Storage::on_rename: publish, build, import) bumps its
// generation, so watching controllers swap.
#include "runtime/state.hpp"

#include "swap/generations.hpp"

namespace kiln {

void Runtime::State::bump_generation(const std::string &consumer, const std::string &name) const noexcept {
  try {
    // Twice at most: a file found truncated in place by the first try is replaced by reopening.
    for (int attempt = 0;; ++attempt) {
      std::shared_ptr<swap::GenerationTable> table;
      {
        std::lock_guard<std::mutex> lock(generations_mutex);
        // Reopened when another process replaced the file (it found it damaged): bumps of a
        // file no watcher reads any more would be lost.
        if (!generations || !generations->current()) {
          generations = swap::GenerationTable::open_or_log(writable().root().string(), options.log);
        }
        table = generations;
      }
      if (!table) return;
      try {
        const std::uint64_t generation = table->bump_if_watched(consumer, name);
        if (generation != 0) {
          log(LogLevel::debug, "swap trigger: " + consumer + "/" + name + " is at generation " + std::to_string(generation));
        }
        return;
      } catch (const IoError &) {
        if (attempt > 0 || table->current()) throw;
      }
    }
  } catch (const std::exception &error) {
    try {
      log(LogLevel::warning, "swap trigger of " + consumer + "/" + name + " not bumped: " + error.what() +
                                 "; running controllers were not told (kiln swap " + consumer + " " + name + " tells them)");
    } catch (...) {
    }
  } catch (...) {
  }
}

}  // namespace kiln
