// Store maintenance at scale: kiln verify and kiln gc on a writable cache of N entries (default
// 10,000 in 10 consumers, 64 KiB artifacts, half of them named by the manifests), each against
// a baseline doing the same I/O in the same run:
//   verify  vs reading every artifact and hashing it with XXH3-128 (what its digest check must do)
//   gc      vs one lstat of every file of every entry (the least any size-based eviction walks)
// Entries are written through the store's own staging and commit (not kiln publish: the
// artifacts are random bytes carrying a build stamp of their entry's key, which gc and verify
// read but never execute).
//
// Then bundles: one consumer's N tiny entries (default 10,000, the most a bundle may carry)
// exported unsigned and imported into an empty cache, against the least such an import writes:
// one create + write + fsync + rename per entry.
//
// The memory of `kiln verify` and `kiln gc --dry-run`, each a process of its own (the CLI) on the
// same cache: their peak resident set, which must not grow with the store.
//
//   kiln_bench_store [entries] [artifact_kib] [import_entries] [--memory-only]
//
// --memory-only: only the cache and the CLI's peak resident set (for a million entries, where
// the timed passes would take hours on a small machine).
#include <fcntl.h>
#include <malloc.h>
#include <spawn.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <cstddef>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <iterator>
#include <random>
#include <stdexcept>
#include <string>
#include <vector>

#include <boost/filesystem/operations.hpp>

#include <kiln/bundle.hpp>
#include <kiln/gc.hpp>
#include <kiln/runtime.hpp>
#include <kiln/stamp.h>
#include <kiln/verify.hpp>
#include <kiln/version.h>

#include "artifact/identity_json.hpp"
#include "files/digest.hpp"
#include "files/files.hpp"
#include "store/local_store.hpp"
#include "store/manifest.hpp"

namespace fs = boost::filesystem;
using Clock = std::chrono::steady_clock;

namespace {

double seconds_since(Clock::time_point start) { return std::chrono::duration<double>(Clock::now() - start).count(); }

// Peak resident set since the last reset_peak_rss(), in MB (/proc/self/status VmHWM; the reset
// is clear_refs "5", Linux 4.0). 0 where /proc says nothing.
void reset_peak_rss() { std::ofstream("/proc/self/clear_refs") << "5"; }
double peak_rss_mb() {
  std::ifstream status("/proc/self/status");
  std::string line;
  while (std::getline(status, line)) {
    if (line.rfind("VmHWM:", 0) == 0) return std::stod(line.substr(6)) / 1024.0;
  }
  return 0;
}

// Runs the kiln CLI with `args` on `cache` (output discarded) through kiln_bench_peak_rss (a
// small launcher: a child of this large process would count this process's memory as its own);
// its peak resident set in MB, or a negative number when it could not run or did not exit 0.
double cli_peak_rss_mb(const fs::path &cache, std::vector<std::string> args) {
  args.insert(args.begin(), {KILN_BENCH_PEAK_RSS, KILN_BENCH_CLI});
  std::vector<char *> argv;
  for (auto &arg : args) argv.push_back(arg.data());
  argv.push_back(nullptr);
  std::vector<std::string> env_text = {"KILN_CACHE_DIR=" + cache.string(), "KILN_STORE_PATH=", "KILN_DEVICE=sm_90",
                                       "HOME=" + cache.parent_path().string()};
  if (const char *libraries = std::getenv("LD_LIBRARY_PATH")) {  // a staged tree's libraries
    env_text.push_back(std::string("LD_LIBRARY_PATH=") + libraries);
  }
  std::vector<char *> envp;
  for (auto &entry : env_text) envp.push_back(entry.data());
  envp.push_back(nullptr);
  int out[2];
  if (::pipe2(out, O_CLOEXEC) != 0) return -1;
  posix_spawn_file_actions_t actions;
  posix_spawn_file_actions_init(&actions);
  posix_spawn_file_actions_adddup2(&actions, out[1], 1);
  pid_t pid = 0;
  const int spawned = ::posix_spawn(&pid, KILN_BENCH_PEAK_RSS, &actions, nullptr, argv.data(), envp.data());
  posix_spawn_file_actions_destroy(&actions);
  ::close(out[1]);
  std::string answer;
  char buffer[64];
  for (ssize_t got; spawned == 0 && (got = ::read(out[0], buffer, sizeof buffer)) > 0;) {
    answer.append(buffer, static_cast<std::size_t>(got));
  }
  ::close(out[0]);
  if (spawned != 0) return -1;
  int status = 0;
  if (::waitpid(pid, &status, 0) != pid || !WIFEXITED(status) || WEXITSTATUS(status) != 0) return -1;
  return std::strtod(answer.c_str(), nullptr) / 1024.0;
}

std::string megabytes(double mb) {
  if (mb < 0) return "FAILED";
  char text[32];
  std::snprintf(text, sizeof text, "%.1f MB", mb);
  return text;
}

struct CliMemory {
  double verify_mb = -1, gc_mb = -1;
  bool ok() const { return verify_mb > 0 && gc_mb > 0; }
};

// The CLI's memory on the cache, printed: verify exits 0 (orphan entries are findings of
// severity info), gc --dry-run plans evicting down to `gc_max_bytes`.
CliMemory cli_memory(const fs::path &cache, std::uint64_t gc_max_bytes, int entries) {
  CliMemory memory;
  memory.verify_mb = cli_peak_rss_mb(cache, {"verify"});
  memory.gc_mb = cli_peak_rss_mb(cache, {"gc", "--dry-run", "--max-size", std::to_string(gc_max_bytes)});
  std::printf("  peak RSS of the CLI process: kiln verify %s, kiln gc --dry-run %s (%d entries)\n",
              megabytes(memory.verify_mb).c_str(), megabytes(memory.gc_mb).c_str(), entries);
  return memory;
}

std::string hex32(std::uint64_t a, std::uint64_t b) {
  char text[33];
  std::snprintf(text, sizeof text, "%016llx%016llx", static_cast<unsigned long long>(a), static_cast<unsigned long long>(b));
  return text;
}

// The host-only test plugin with its build stamp naming `key` (what verify, export and import
// check of a plugin entry's file), padded with random bytes to `size` (an ELF reader reads by
// offsets: what follows the file's last section is never read as part of it).
std::string stamped_plugin(const std::string &key, std::mt19937_64 &random, std::size_t size = 0) {
  static const std::string base = [] {
    std::ifstream in(KILN_BENCH_STORE_PLUGIN, std::ios::binary);
    return std::string(std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>());
  }();
  std::string bytes = base;
  const std::size_t at = bytes.find(std::string(KILN_STAMP_MAGIC, KILN_STAMP_MAGIC_SIZE));
  if (at == std::string::npos) throw std::runtime_error(std::string("no build stamp in ") + KILN_BENCH_STORE_PLUGIN);
  std::memcpy(&bytes[at + offsetof(kiln_build_stamp, content_key)], key.data(), KILN_STAMP_KEY_SIZE);
  while (bytes.size() < size) bytes.push_back(static_cast<char>(random()));
  return bytes;
}

// The least an import of `entries` files writes: each created, written, fsynced and renamed
// into place (the store's write_file_atomic).
double baseline_write_rename(const fs::path &dir, int entries, const std::string &bytes) {
  fs::create_directories(dir);
  const auto start = Clock::now();
  for (int i = 0; i < entries; ++i) kiln::files::write_file_atomic(dir / std::to_string(i), bytes);
  return seconds_since(start);
}

bool bench_import(const fs::path &root, int entries) {
  const fs::path source = root / "import-source";
  const kiln::store::LocalStore store({source, true, "bench"});
  std::mt19937_64 random(7);
  const std::string identity = kiln::artifact::identity_file_text(kiln::ArtifactIdentity{});
  kiln::store::Manifest named;
  for (int i = 0; i < entries; ++i) {
    const std::string key = hex32(random(), random());
    const std::string bytes = stamped_plugin(key, random);
    kiln::store::Staging staging =
        store.stage("c", {}, i == 0 ? kiln::store::SweepFirst::yes : kiln::store::SweepFirst::already_swept);
    staging.write("libsolver.so", bytes, 0755);
    staging.write_records({key, "plugin", "libsolver.so", kiln::files::digest_hex(bytes), bytes.size(),
                           kiln::store::utc_now_iso8601(), {}, {}},
                          identity);
    store.commit_entry(std::move(staging), {});
    named.artifacts["n" + std::to_string(i)] = {key, "", "plugin", kiln::store::utc_now_iso8601(), ""};
  }
  kiln::store::update_manifest(store.layout("c"), [&](kiln::store::Manifest &manifest) { manifest.artifacts = named.artifacts; });

  kiln::RuntimeOptions options;
  options.cache_dir = source.string();
  options.declared_device = "sm_90";
  kiln::ExportRequest request;
  request.consumer = "c";
  request.output = (root / "many.kbundle").string();
  auto start = Clock::now();
  const kiln::ExportReport exported = kiln::Runtime(options).export_bundle(request);
  const double export_s = seconds_since(start);

  options.cache_dir = (root / "import-target").string();
  kiln::Runtime target(options);
  kiln::ImportRequest import;
  import.bundle = request.output;
  import.allow_unsigned = true;
  ::malloc_trim(0);  // what export freed goes back to the system first: the peak is the import's own
  reset_peak_rss();
  start = Clock::now();
  const kiln::ImportReport imported = target.import_bundle(import);
  const double import_s = seconds_since(start);
  const double import_peak_mb = peak_rss_mb();
  const double baseline_s = baseline_write_rename(root / "import-baseline", entries, std::string(256, 'x'));
  const bool ok = imported.entries.size() == static_cast<std::size_t>(entries);
  std::printf("  bundle of %d entries (%llu bytes): export %.3f s\n", entries,
              static_cast<unsigned long long>(exported.bundle_bytes), export_s);
  std::printf("  baseline write + fsync + rename per entry %7.3f s\n", baseline_s);
  std::printf("  kiln import                               %7.3f s  %7.0f entries/s   ratio %.2fx  peak RSS %.0f MB%s\n",
              import_s, entries / import_s, import_s / baseline_s, import_peak_mb,
              ok ? "" : "  FAILED: not every entry imported");
  std::printf("{\"bench\":\"import\",\"entries\":%d,\"export_s\":%.3f,\"import_s\":%.3f,\"baseline_s\":%.3f}\n",
              entries, export_s, import_s, baseline_s);
  return ok;
}

}  // namespace

int main(int argc, char **argv) {
  const int entries = argc > 1 ? std::atoi(argv[1]) : 10000;
  const std::size_t kib = argc > 2 ? static_cast<std::size_t>(std::atoi(argv[2])) : 64;
  const int import_entries = argc > 3 ? std::atoi(argv[3]) : 10000;
  const bool memory_only = argc > 4 && std::strcmp(argv[4], "--memory-only") == 0;
  const int consumers = 10;
  std::setvbuf(stdout, nullptr, _IOLBF, 0);  // each line as it is measured, into a log too
  char pattern[] = "/tmp/kiln-bench-store-XXXXXX";
  if (::mkdtemp(pattern) == nullptr) return 1;
  const fs::path cache = fs::path(pattern) / "cache";
  const kiln::store::LocalStore store({cache, true, "bench"});

  std::mt19937_64 random(42);
  const std::string identity = kiln::artifact::identity_file_text(kiln::ArtifactIdentity{});
  auto start = Clock::now();
  std::vector<std::vector<std::string>> keys(consumers);
  std::vector<kiln::store::Staging> batch;  // committed as an import does, 1,000 at a time
  for (int i = 0; i < entries; ++i) {
    const std::string consumer = "c" + std::to_string(i % consumers);
    const std::string key = hex32(random(), random());
    // Stamped with its own key, as verify checks every plugin file's stamp.
    const std::string bytes = stamped_plugin(key, random, kib * 1024);
    const kiln::store::EntryMeta meta{key, "plugin", "libsolver.so", kiln::files::digest_hex(bytes), bytes.size(),
                                      kiln::store::utc_now_iso8601(), {}, {}};
    if (memory_only) {
      // The store's format written in place, without its commit protocol (a fixture, not what
      // is measured): a million entries in minutes rather than an hour.
      const fs::path dir = store.layout(consumer).entry(key);
      kiln::files::create_directories(dir);
      kiln::files::write_staging_file(dir / "libsolver.so", bytes, 0755);
      kiln::files::write_staging_file(dir / kiln::store::kMetaFile, kiln::store::serialize_entry_meta(meta));
      kiln::files::write_staging_file(dir / kiln::store::kIdentityFile, identity);
    } else {
      kiln::store::Staging staging = store.stage(consumer, {});
      staging.write("libsolver.so", bytes, 0755);
      staging.write_records(meta, identity);
      batch.push_back(std::move(staging));
    }
    if (!batch.empty() && (batch.size() == 1000 || i + 1 == entries)) {
      store.commit_entries(std::move(batch), {});
      batch.clear();
    }
    keys[static_cast<std::size_t>(i % consumers)].push_back(key);
  }
  for (int c = 0; c < consumers; ++c) {  // one manifest per consumer naming half its entries
    kiln::store::update_manifest(store.layout("c" + std::to_string(c)), [&](kiln::store::Manifest &manifest) {
      const auto &mine = keys[static_cast<std::size_t>(c)];
      for (std::size_t k = 0; k < mine.size(); k += 2) {
        manifest.artifacts["n" + std::to_string(k)] = {mine[k], "", "plugin", kiln::store::utc_now_iso8601(), ""};
      }
    });
  }
  const double create_s = seconds_since(start);
  std::printf("kiln store bench: %d entries of %zu KiB in %d consumers (made in %.1f s)\n", entries, kib, consumers,
              create_s);

  if (memory_only) {
    const CliMemory memory = cli_memory(cache, static_cast<std::uint64_t>(entries) * kib * 512, entries);  // half
    std::printf("{\"bench\":\"store_memory\",\"entries\":%d,\"verify_rss_mb\":%.1f,\"gc_rss_mb\":%.1f}\n", entries,
                memory.verify_mb, memory.gc_mb);
    fs::remove_all(pattern);
    return memory.ok() ? 0 : 1;
  }

  kiln::RuntimeOptions options;
  options.cache_dir = cache.string();
  options.declared_device = "sm_90";
  kiln::Runtime runtime(options);

  // verify vs read + hash every artifact.
  start = Clock::now();
  std::uint64_t hashed = 0;
  for (int c = 0; c < consumers; ++c) {
    const auto layout = store.layout("c" + std::to_string(c));
    for (const auto &key : keys[static_cast<std::size_t>(c)]) {
      const std::string file = (layout.entry(key) / "libsolver.so").string();
      hashed += kiln::files::digest_file(file).size();
    }
  }
  const double hash_s = seconds_since(start);
  start = Clock::now();
  kiln::VerifyOptions verify_options;
  verify_options.on_finding = [](const kiln::StoreFinding &) {};  // counted in the report, not kept (as the CLI does)
  const kiln::VerifyReport report = runtime.verify(verify_options);
  const double verify_s = seconds_since(start);
  const bool verify_ok = report.unrepaired_damage() == 0 && report.entries == static_cast<std::uint64_t>(entries);
  const double mb = static_cast<double>(report.bytes) / 1e6;
  std::printf("  baseline read + XXH3 of every artifact   %7.3f s  %7.0f MB/s\n", hash_s, mb / hash_s);
  if (verify_ok) {
    std::printf("  kiln verify                              %7.3f s  %7.0f MB/s, %7.0f entries/s   ratio %.2fx\n",
                verify_s, mb / verify_s, entries / verify_s, verify_s / hash_s);
  } else {
    std::printf("  kiln verify FAILED: %llu damage findings, %llu entries checked\n",
                static_cast<unsigned long long>(report.unrepaired_damage()),
                static_cast<unsigned long long>(report.entries));
  }

  const CliMemory memory = cli_memory(cache, report.bytes / 2, entries);  // before gc changes the cache

  // gc vs one lstat per file.
  start = Clock::now();
  std::uint64_t walked = 0;
  for (fs::recursive_directory_iterator it(cache / "consumers"), end; it != end; ++it) {
    struct stat info {};
    if (::lstat(it->path().c_str(), &info) == 0) walked += static_cast<std::uint64_t>(info.st_size);
  }
  const double walk_s = seconds_since(start);
  kiln::GcOptions gc;
  gc.max_bytes = report.bytes / 2;  // the unnamed half goes
  gc.dry_run = true;
  start = Clock::now();
  const kiln::GcReport planned = runtime.gc(gc);
  const double plan_s = seconds_since(start);
  gc.dry_run = false;
  start = Clock::now();
  const kiln::GcReport collected = runtime.gc(gc);
  const double gc_s = seconds_since(start);
  std::printf("  baseline lstat of every file              %7.3f s\n", walk_s);
  std::printf("  kiln gc --dry-run (the survey)            %7.3f s   ratio %.2fx\n", plan_s, plan_s / walk_s);
  std::printf("  kiln gc --max-size (half): %llu of %llu entries evicted in %.3f s (%.0f us per evicted entry)\n",
              static_cast<unsigned long long>(collected.entries_evicted),
              static_cast<unsigned long long>(collected.entries_seen), gc_s,
              collected.entries_evicted ? 1e6 * gc_s / static_cast<double>(collected.entries_evicted) : 0.0);
  std::printf("{\"bench\":\"store\",\"entries\":%d,\"verify_s\":%.3f,\"verify_mb_s\":%.0f,\"hash_s\":%.3f,"
              "\"gc_plan_s\":%.3f,\"gc_s\":%.3f,\"gc_evicted\":%llu,\"planned\":%llu,\"walk_s\":%.3f,\"hashed\":%llu,"
              "\"walked\":%llu,\"verify_rss_mb\":%.1f,\"gc_rss_mb\":%.1f}\n",
              entries, verify_s, mb / verify_s, hash_s, plan_s, gc_s,
              static_cast<unsigned long long>(collected.entries_evicted),
              static_cast<unsigned long long>(planned.entries_evicted), walk_s, static_cast<unsigned long long>(hashed),
              static_cast<unsigned long long>(walked), memory.verify_mb, memory.gc_mb);
  const bool import_ok = import_entries <= 0 || bench_import(fs::path(pattern), import_entries);
  fs::remove_all(pattern);
  return verify_ok && import_ok ? 0 : 1;
}
