#include "builder/stale.hpp"

#include <set>

namespace kiln::builder {
namespace {

constexpr const char *kInputPrefix = "input:";
constexpr std::size_t kInputPrefixSize = 6;

std::string value_in(const std::map<std::string, std::string> &fields, const std::string &field) {
  const auto it = fields.find(field);
  return it == fields.end() ? "(none)" : it->second;
}

bool is_input_record(const std::string &field) { return field.compare(0, kInputPrefixSize, kInputPrefix) == 0; }

// BuildIdentity::fields() as people say them.
std::string display_name(const std::string &field) {
  static const std::map<std::string, std::string> names = {
      {"abi_headers", "kiln ABI headers"}, {"abi_version", "plugin ABI"},        {"artifact_schema", "artifact schema"},
      {"host_compiler", "host compiler"},  {"jit_toolchain", "JIT toolchain"},   {"key_schema", "key schema"},
      {"kiln_version", "kiln"},            {"nvcc_version", "nvcc"},                {"cmake_version", "cmake"}};
  if (const auto it = names.find(field); it != names.end()) return it->second;
  if (field.compare(0, 10, "generator.") == 0) return "generator " + field.substr(10);
  if (field.compare(0, 4, "env.") == 0) return "environment variable " + field.substr(4);
  return field;
}

// nvcc by its release ("13.0.48") where both sides know it and it differs, else by the build line.
Reason nvcc_reason(const std::map<std::string, std::string> &recorded, const InputRecords &records,
                   const std::string &recorded_line, const std::string &current_line) {
  const auto release = [](const std::map<std::string, std::string> &fields) {
    const auto it = fields.find("toolchain:nvcc_release");
    return it == fields.end() ? std::string() : it->second;
  };
  const std::string was = release(recorded), now = release(records);
  if (!was.empty() && !now.empty() && was != now) return {"nvcc", was, now, ""};
  return {"nvcc", recorded_line, current_line, ""};
}

}  // namespace

std::vector<Reason> stale_reasons(const std::map<std::string, std::string> &recorded, const BuildIdentity &identity,
                                  const InputRecords &records, const std::string &input_key) {
  std::vector<Reason> reasons;
  const std::map<std::string, std::string> current = identity.fields();
  for (const auto &[field, value] : current) {
    const std::string was = value_in(recorded, field);
    if (was == value) continue;
    reasons.push_back(field == "nvcc_version" ? nvcc_reason(recorded, records, was, value)
                                              : Reason{display_name(field), was, value, ""});
  }
  // A toolchain variable set for the recorded build and unset now.
  for (auto it = recorded.lower_bound("env."); it != recorded.end() && it->first.compare(0, 4, "env.") == 0; ++it) {
    if (current.count(it->first) == 0) reasons.push_back({display_name(it->first), it->second, "(unset)", ""});
  }

  std::set<std::string> inputs;
  for (const auto &entry : recorded) {
    if (is_input_record(entry.first)) inputs.insert(entry.first);
  }
  const bool recorded_inputs = !inputs.empty();
  if (recorded_inputs) {
    for (const auto &entry : records) {
      if (is_input_record(entry.first)) inputs.insert(entry.first);
    }
  }
  for (const auto &field : inputs) {
    const std::string was = value_in(recorded, field), now = value_in(records, field);
    if (was != now) reasons.push_back({field.substr(kInputPrefixSize), was, now, ""});
  }

  const std::string recorded_key = value_in(recorded, "input_key");
  if (reasons.empty() && recorded_key != input_key) {
    reasons.push_back({"inputs", recorded_key, input_key,
                       recorded_inputs ? "an input kiln does not record one by one changed"
                                       : "the entry was built by a kiln that did not record its inputs one by one"});
  }
  return reasons;
}

}  // namespace kiln::builder
