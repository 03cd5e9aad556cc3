// The nvrtc backend of the build flow (backend.hpp): device images compiled in process by
// NVRTC (and nvJitLink for LTO or several sources), one file per image in the entry, plus a
// fatbin where nvFatbin exists, plus the image index that is the artifact file.
//
// Headers go to NVRTC by content only (it never reads a directory), so the content key covers
// exactly the bytes compiled. Each declared header is offered under the path relative to the
// recipe's directory, and also under its path relative to each include_dir holding it (so
// `#include "foo.cuh"` finds include/foo.cuh when "include" is an include_dir); each generated
// output under its file name. When two files claim one include name, the first claim wins, in
// this order: recipe-relative names, generated outputs, include_dirs in recipe order (nvcc's
// search order for a source in the recipe's directory); build.log lists the map.
#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cerrno>
#include <chrono>
#include <cstring>
#include <map>

#include <boost/filesystem/operations.hpp>
#include <nlohmann/json.hpp>

#include <kiln/errors.hpp>
#include <kiln/version.hpp>
#include <kiln/module.hpp>

#include "builder/arch_support.hpp"
#include "builder/backend.hpp"
#include "builder/backends/nvrtc/toolchain.hpp"
#include "files/digest.hpp"
#include "store/entry.hpp"
#include "files/files.hpp"
#include "files/unique_fd.hpp"
#include "support/json_write.hpp"

namespace kiln::builder {
namespace {

namespace fs = boost::filesystem;

std::atomic<std::uint64_t> jit_compiles{0};

bool under(const std::string &path, const std::string &dir) {
  const fs::path relative = fs::path(path).lexically_relative(dir);
  return !relative.empty() && *relative.begin() != "..";
}

// A staging file, mode 0644 whatever the umask (code runs only from files others cannot
// write): a plain write, since commit_staging fsyncs every file before the rename publishes it.
void write_staged(const fs::path &file, const std::string &bytes) {
  files::UniqueFd fd(::open(file.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0644));
  if (fd.get() < 0) throw IoError("cannot create " + file.string() + ": " + std::strerror(errno));
  std::size_t done = 0;
  int error = 0;
  while (done < bytes.size()) {
    const ssize_t wrote = ::write(fd.get(), bytes.data() + done, bytes.size() - done);
    if (wrote < 0) {
      if (errno == EINTR) continue;
      error = errno;
      break;
    }
    done += static_cast<std::size_t>(wrote);
  }
  if (error == 0 && ::fchmod(fd.get(), 0644) != 0) error = errno;
  if (::close(fd.release()) != 0 && error == 0) error = errno;
  if (error != 0) throw IoError("cannot write " + file.string() + ": " + std::strerror(error));
}

class NvrtcBackend final : public Backend {
 public:
  explicit NvrtcBackend(const BuilderContext &context) : context_(context), toolchain_(NvrtcToolchain::instance()) {}

  BuildIdentity identity(const Recipe &recipe, const std::vector<Arch> &archs, bool remember) override {
    const std::string what = "cannot build " + recipe.consumer + "/" + recipe.name + " (recipe " + recipe.file +
                             ", backend nvrtc): ";
    if (!toolchain_.nvrtc().found) {
      throw ToolchainMissingError(what + toolchain_.nvrtc().detail + "; prepared artifacts still load without NVRTC");
    }
    if ((recipe.lto || recipe.sources.size() > 1) && !toolchain_.nvjitlink().found) {
      throw NotFoundError(what + (recipe.lto ? "it asks for LTO" : "it has several sources") +
                          ", which nvJitLink links: " + toolchain_.nvjitlink().detail);
    }
    require_supported_archs(archs, toolchain_.supported_archs(), "NVRTC " + toolchain_.nvrtc().version_text(), recipe.file);
    jit_text_ = toolchain_.identity() + ";nvfatbin=" +
                (toolchain_.nvfatbin().found ? toolchain_.nvfatbin().version_text() : std::string("none"));
    return jit_build_identity(recipe, archs, jit_text_, tool_digest_memo(context_, remember));
  }

  std::string toolchain_text() const override {
    return toolchain_.nvrtc().detail + "\n" + toolchain_.nvjitlink().detail + "\n" + toolchain_.nvfatbin().detail + "\n";
  }

  void plan(const Recipe &recipe, const BuildOptions &options, const BuildIdentity & /*identity*/,
            BuildPlan &plan) const override {
    (void)options;
    plan.jit_toolchain = jit_text_;
    std::string sources;
    for (const auto &source : recipe.sources) sources += (sources.empty() ? "" : ", ") + fs::path(source).filename().string();
    const bool linked = recipe.lto || recipe.sources.size() > 1;
    plan.steps.push_back("nvrtc " + sources + " for " + arch_list(plan.archs) + " in process" +
                         (linked ? std::string(recipe.lto ? ", LTO-linked by nvJitLink" : ", linked by nvJitLink") : ""));
    if (toolchain_.nvfatbin().found) plan.steps.push_back("package images.fatbin (nvFatbin)");
    std::string kernels;
    for (const auto &kernel : recipe.kernels) kernels += (kernels.empty() ? "" : ", ") + kernel.name;
    plan.steps.push_back("write " + recipe.artifact + " (image index; kernels " + kernels + ")");
  }

  std::optional<std::string> content_key(const StagedBuild &build) override {
    const Recipe &recipe = build.recipe;
    request_ = NvrtcRequest();
    for (const auto &source : recipe.sources) request_.sources.push_back({relative_to(source, recipe.base_dir), files::read_file(source, files::FileOrigin::input)});

    // Headers by content, under every name an #include may use (see the top of this file).
    std::map<std::string, std::string> bytes_of;  // file -> bytes
    std::map<std::string, std::string> claimed;   // include name -> file
    std::string map_log;
    const auto offer = [&](const std::string &name, const std::string &file) {
      const auto [it, fresh] = claimed.emplace(name, file);
      if (!fresh) {
        if (it->second != file) map_log += "  \"" + name + "\": " + file + " is shadowed by " + it->second + "\n";
        return;
      }
      auto found = bytes_of.find(file);
      if (found == bytes_of.end()) found = bytes_of.emplace(file, files::read_file(file, files::FileOrigin::input)).first;
      request_.headers.push_back({name, found->second});
      map_log += "  \"" + name + "\" -> " + file + "\n";
    };
    std::vector<std::string> headers;  // normal form: a directory "include/" lists "include/./x.cuh"
    for (const auto &file : expand_headers(recipe)) headers.push_back(fs::path(file).lexically_normal().string());
    for (const auto &file : headers) offer(relative_to(file, recipe.base_dir), file);
    for (const auto &file : build.generated) offer(fs::path(file).filename().string(), file);
    for (const auto &include_dir : recipe.include_dirs) {
      const std::string dir = fs::path(include_dir).lexically_normal().string();
      for (const auto &file : headers) {
        if (under(file, dir)) offer(relative_to(file, dir), file);
      }
    }
    header_names_.clear();
    for (const auto &header : request_.headers) header_names_ += (header_names_.empty() ? "" : ", ") + header.include_name;
    append_log(build.build_log, "headers given to NVRTC by include name:\n" + map_log);

    request_.defines = recipe.defines;
    request_.options = recipe.flags;
    request_.link_options = recipe.link_flags;
    request_.archs = build.archs;
    request_.lto = recipe.lto;
    for (const auto &kernel : recipe.kernels) {
      request_.kernels.emplace_back(kernel.name, kernel.source.empty() ? std::string() : relative_to(kernel.source, recipe.base_dir));
    }

    files::Hasher content;
    content.add_field("key", "content")
        .add_field("key_schema", std::to_string(kKeySchema))
        .add_field("backend", "nvrtc")
        .add_field("jit_toolchain", jit_text_)
        .add_field("archs", arch_list(request_.archs))
        .add_field("lto", request_.lto ? "1" : "0")
        .add_field("artifact", recipe.artifact);
    for (const auto &source : request_.sources) content.add_field("source", source.name).add_field("bytes", files::digest_hex(source.bytes));
    for (const auto &header : request_.headers) content.add_field("header", header.include_name).add_field("bytes", files::digest_hex(header.bytes));
    for (const auto &define : request_.defines) content.add_field("define", define);
    for (const auto &option : request_.options) content.add_field("option", option);
    for (const auto &option : request_.link_options) content.add_field("link_option", option);
    for (const auto &kernel : request_.kernels) content.add_field("kernel", kernel.name).add_field("kernel_source", kernel.source);
    return content.hex();
  }

  Produced compile(const StagedBuild &build, const std::string &content_key,
                   const SettleContentKey & /*settle: the key is known before*/) override {
    (void)content_key;
    const Recipe &recipe = build.recipe;
    const BuildOptions &options = build.options;
    request_.jobs = options.jobs;
    if (options.progress) {
      options.progress({BuildEvent::Kind::units_queued, recipe.consumer + "/" + recipe.name, 0, false, request_.sources.size()});
    }
    for (const auto &source : request_.sources) {
      if (options.progress) options.progress({BuildEvent::Kind::unit_started, source.name, 0, false});
    }
    JitResult result;
    jit_compiles.fetch_add(1, std::memory_order_relaxed);
    try {
      result = toolchain_.compile(request_);
    } catch (const BuildError &error) {
      append_log(build.build_log, error.what() + std::string("\n") + error.log());
      // NVRTC reads no directory: an #include it cannot open is a header the recipe did not
      // declare (or one under a name it was not given).
      const std::string given = "headers given to NVRTC (by content, from \"headers\" and generators): " +
                                (header_names_.empty() ? std::string("none") : header_names_);
      throw BuildError(std::string(error.what()) + "; nothing was published (recipe " + recipe.file + ")\n" + given,
                       error.log() + "\n" + given + "\n");
    } catch (const UsageError &error) {
      throw UsageError("recipe " + recipe.file + ": " + error.what());
    }
    std::string steps;
    for (const auto &step : result.steps) steps += "  " + step.what + ": " + std::to_string(step.ms) + " ms\n";
    append_log(build.build_log, "JIT compile in " + std::to_string(result.total_ms) + " ms\n" + steps + result.log);

    Produced produced;
    produced.kind = kKindImages;
    produced.file = recipe.artifact;
    produced.cuda_toolkit_version = result.nvrtc_version;
    for (const auto &step : result.steps) produced.units.push_back({step.what, false, step.ms / 1000.0});
    if (options.progress) {
      for (const auto &step : result.steps) options.progress({BuildEvent::Kind::unit_finished, step.what, step.ms / 1000.0, false});
    }
    const auto keep = [&](const DeviceImage &image, const std::string &file) {
      ArtifactImage record;
      record.file = file;
      record.kind = image.kind;
      record.arch = image.arch;
      record.contains = image.contains;
      record.digest = files::digest_hex(image.bytes);
      record.size = image.bytes.size();
      write_staged(build.staging / file, image.bytes);
      produced.images.push_back(std::move(record));
    };
    for (const auto &image : result.images) keep(image, image.arch.to_string() + (image.kind == "cubin" ? ".cubin" : ".ptx"));
    if (toolchain_.nvfatbin().found) {
      if (options.progress) options.progress({BuildEvent::Kind::link_started, "images.fatbin", 0, false});
      const auto started = std::chrono::steady_clock::now();
      try {
        if (const auto fatbin = toolchain_.package_fatbin(result.images)) keep(*fatbin, "images.fatbin");
      } catch (const Error &error) {
        // The per-arch images are the artifact; the fatbin is a convenience. Same inputs fail
        // the same way, so the entry stays a function of its key.
        append_log(build.build_log, std::string("no images.fatbin: ") + error.what() + "\n");
        if (build.context.log) build.context.log(LogLevel::warning, recipe.consumer + "/" + recipe.name + ": no images.fatbin: " + error.what());
      }
      const double seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - started).count();
      if (options.progress) options.progress({BuildEvent::Kind::link_finished, "images.fatbin", seconds, false});
    }
    for (const auto &kernel : result.kernels) produced.kernels.push_back({kernel.name, kernel.lowered_name});

    // The artifact file: the image index (the same lists as meta.json), so the entry describes
    // itself; its digest is meta.json's "digest".
    const nlohmann::json index = {{"schema", kArtifactSchema},
                                  {"consumer", recipe.consumer},
                                  {"name", recipe.name},
                                  {"cuda_toolkit_version", result.nvrtc_version},
                                  {"kernels", store::kernels_json(produced.kernels)},
                                  {"images", store::images_json(produced.images)}};
    const std::string bytes = support::dump_json(index, 2) + "\n";
    write_staged(build.staging / recipe.artifact, bytes);
    produced.bytes_digest = files::digest_hex(bytes);
    produced.size = bytes.size();
    produced.provenance["nvrtc_version"] = std::to_string(result.nvrtc_version);
    if (result.nvjitlink_version != 0) produced.provenance["nvjitlink_version"] = std::to_string(result.nvjitlink_version);
    produced.provenance["jit_ms"] = std::to_string(result.total_ms);
    return produced;
  }

 private:
  const BuilderContext &context_;
  NvrtcToolchain &toolchain_;
  std::string jit_text_;
  NvrtcRequest request_;
  std::string header_names_;  // the include names given, for messages
};

}  // namespace

std::unique_ptr<Backend> make_nvrtc_backend(const BuilderContext &context) {
  return std::make_unique<NvrtcBackend>(context);
}

std::uint64_t jit_compile_count() noexcept { return jit_compiles.load(std::memory_order_relaxed); }

}  // namespace kiln::builder
