// kiln swap's side of the cross-process trigger: bump consumer/name's generation (asking for a
// content key when given) and read what the watching processes answered.
#include <kiln/store.hpp>
#include <kiln/swap.hpp>

#include <thread>

#include "support/typed_errors.hpp"
#include "swap/generations.hpp"

namespace kiln {
namespace {

using swap::GenerationTable;

std::shared_ptr<GenerationTable> table_of(const Runtime &runtime) {
  const LogCallback log = [&runtime](LogLevel level, const std::string &line) { runtime.log(level, line); };
  return GenerationTable::open(runtime.stores().back().root, log);
}

// Whether a watcher's record at or past the request answers it. A plain request is answered by
// any: the watcher serves what the name resolves to now. A --to KEY request is answered by the
// watcher handling exactly it (swapped, unchanged or refused), or serving KEY after a later one.
// Requests coalesce (a watcher reads only the latest), so a later request may have replaced it
// before the watcher looked, and a watcher that started after it never handled it.
bool answers(const swap::Acknowledgement &record, const SwapRequestResult &request) {
  if (!request.content_key) return true;
  if (record.outcome == swap::Outcome::watching) return false;
  if (record.generation == request.generation) return true;
  return record.outcome != swap::Outcome::refused && record.note == *request.content_key;
}

// Sorts the records into acknowledged (at `generation` or past it, answering it), not serving
// (past it, not answering it), pending and foreign.
void sort_records(GenerationTable &table, SwapRequestResult &result) {
  result.acknowledged.clear();
  result.not_serving.clear();
  result.pending.clear();
  result.foreign.clear();
  for (const auto &record : table.acknowledgements(result.consumer, result.name)) {
    SwapAcknowledgement ack;
    ack.pid = record.pid;
    ack.same_pid_namespace = record.same_pid_namespace;
    ack.generation = record.generation;
    ack.outcome = swap::to_string(record.outcome);
    ack.exit_code = record.error_kind;
    ack.note = record.note;
    if (record.generation >= result.generation) {
      (answers(record, result) ? result.acknowledged : result.not_serving).push_back(std::move(ack));
    } else if (record.same_pid_namespace) {
      result.pending.push_back(std::move(ack));
    } else {
      result.foreign.push_back(std::move(ack));
    }
  }
}

}  // namespace

SwapRequestResult request_swap(Runtime &runtime, const std::string &consumer, const std::string &name,
                               const std::optional<std::string> &content_key) try {
  if (content_key) (void)runtime.resolve_entry(consumer, name, *content_key);  // in a store, or NotFoundError
  auto table = table_of(runtime);
  SwapRequestResult result;
  result.consumer = consumer;
  result.name = name;
  result.content_key = content_key;
  result.table_file = table->file();
  result.generation = table->bump(consumer, name, content_key);
  if (result.generation == 0) {
    throw IoError("swap trigger table " + table->file() + " is full (" + std::to_string(swap::kSlots) +
                  " consumer/name pairs): " + consumer + "/" + name +
                  " cannot be triggered; remove the file (running watchers open the new one within a second)");
  }
  sort_records(*table, result);
  return result;
} catch (...) {
  support::rethrow_typed("requesting a hot swap of " + consumer + "/" + name);
}

bool wait_for_acknowledgements(Runtime &runtime, SwapRequestResult &result, std::chrono::milliseconds wait) try {
  auto table = table_of(runtime);
  const auto deadline = std::chrono::steady_clock::now() + wait;
  for (;;) {
    sort_records(*table, result);
    if (result.pending.empty()) return true;
    if (std::chrono::steady_clock::now() >= deadline) return false;
    std::this_thread::sleep_for(std::chrono::milliseconds(5));
  }
} catch (...) {
  support::rethrow_typed("waiting for the watchers of " + result.consumer + "/" + result.name);
}

}  // namespace kiln
