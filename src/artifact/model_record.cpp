#include "artifact/model_record.hpp"

#include <algorithm>

#include <kiln/errors.hpp>

#include "artifact/elf.hpp"
#include "files/digest.hpp"
#include "files/files.hpp"

namespace kiln::artifact {
namespace {

constexpr std::string_view kTextHeader = "kiln-model 1\n";
// Far above any robot's text (a line per link and joint, some 200 bytes each).
constexpr std::uint64_t kMaxSectionBytes = 16u << 20;

}  // namespace

std::string describe_models(const std::vector<RobotModel> &models) {
  if (models.empty()) return "none";
  std::string text;
  for (const auto &model : models) text += (text.empty() ? "" : ", ") + model.fingerprint + " (" + model.chain + ")";
  return text;
}

std::vector<RobotModel> read_models(std::string_view bytes, const std::string &file) {
  std::vector<RobotModel> models;
  for (auto &record : read_model_records(bytes, file)) models.push_back(std::move(record.model));
  return models;
}

std::string model_fingerprint_of(std::string_view text) { return "xxh128:" + files::digest_hex(text); }

namespace {

// The value of the first line starting with `prefix` ("\nchain " etc.); empty when there is none.
std::string line_value(std::string_view text, std::string_view prefix) {
  const std::size_t at = text.find(prefix);
  if (at == std::string_view::npos) return "";
  const std::size_t start = at + prefix.size();
  return std::string(text.substr(start, text.find('\n', start) - start));
}

}  // namespace

std::string model_chain_of(std::string_view text) { return line_value(text, "\nchain "); }

std::string model_gravity_of(std::string_view text) { return line_value(text, "\ngravity "); }

std::vector<ModelRecord> read_model_records(std::string_view bytes, const std::string &file) {
  std::vector<ModelRecord> records;
  const auto section = find_elf_section(bytes, kModelSection);
  if (!section) return records;
  const auto [offset, size] = *section;
  if (offset > bytes.size() || size > bytes.size() - offset || size > kMaxSectionBytes) {
    throw IntegrityError(file + ": its section " + std::string(kModelSection) +
                         " reaches past the end of the file (cut off or damaged); rebuild the plugin");
  }
  // One NUL-terminated text per object file that included a generated header; the linker may pad
  // between them with NULs.
  std::string_view rest = bytes.substr(offset, size);
  while (!rest.empty()) {
    const std::size_t end = rest.find('\0');
    if (end == std::string_view::npos) {
      throw IntegrityError(file + ": its section " + std::string(kModelSection) +
                           " ends inside a model text (cut off or damaged); rebuild the plugin");
    }
    const std::string_view text = rest.substr(0, end);
    rest.remove_prefix(end + 1);
    if (text.empty()) continue;
    if (text.substr(0, kTextHeader.size()) != kTextHeader) {
      throw IntegrityError(file + ": its section " + std::string(kModelSection) +
                           " holds something other than a kiln model text (one written by kiln-urdf-fk starts with "
                           "\"kiln-model 1\"); rebuild the plugin from headers kiln-urdf-fk generated");
    }
    ModelRecord record{{model_fingerprint_of(text), model_chain_of(text)}, std::string(text)};
    const bool seen = std::any_of(records.begin(), records.end(), [&](const ModelRecord &other) {
      return other.model.fingerprint == record.model.fingerprint;
    });
    if (!seen) records.push_back(std::move(record));
  }
  std::sort(records.begin(), records.end(),
            [](const ModelRecord &a, const ModelRecord &b) { return a.model.fingerprint < b.model.fingerprint; });
  return records;
}

std::string first_model_difference(std::string_view a, std::string_view b, const std::string &a_name,
                                   const std::string &b_name) {
  std::size_t line = 1;
  while (!a.empty() || !b.empty()) {
    const std::size_t a_end = std::min(a.find('\n'), a.size());
    const std::size_t b_end = std::min(b.find('\n'), b.size());
    const std::string_view a_line = a.substr(0, a_end), b_line = b.substr(0, b_end);
    if (a_line != b_line) {
      const auto shown = [](std::string_view text) {
        return text.empty() ? std::string("(no such line)") : "\"" + std::string(text) + "\"";
      };
      return "line " + std::to_string(line) + ": " + a_name + " " + shown(a_line) + ", " + b_name + " " + shown(b_line);
    }
    a.remove_prefix(std::min(a_end + 1, a.size()));
    b.remove_prefix(std::min(b_end + 1, b.size()));
    ++line;
  }
  return "";
}

void check_recorded_models(std::string_view bytes, const std::vector<RobotModel> &recorded, const std::string &file) {
  const std::vector<RobotModel> held = read_models(bytes, file);
  std::vector<RobotModel> claimed = recorded;
  std::sort(claimed.begin(), claimed.end(),
            [](const RobotModel &a, const RobotModel &b) { return a.fingerprint < b.fingerprint; });
  if (claimed != held) {
    throw IntegrityError(file + ": its entry records the robot model(s) " + describe_models(claimed) +
                         " but the file was generated from " + describe_models(held) +
                         "; the record is wrong or the file was replaced: rebuild or republish the artifact");
  }
}

}  // namespace kiln::artifact

namespace kiln {

std::vector<std::string> robot_model_texts(const std::string &plugin_file) {
  std::vector<std::string> texts;
  for (auto &record :
       artifact::read_model_records(files::read_file(plugin_file, files::FileOrigin::input), plugin_file)) {
    texts.push_back(std::move(record.text));
  }
  return texts;
}

}  // namespace kiln
