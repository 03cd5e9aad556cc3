// The output of a verb that lists many items as it finds them (kiln verify's findings, kiln
// gc's items): each is written at once, so the CLI's memory does not grow with their number.
#pragma once

#include <exception>
#include <string>

#include <nlohmann/json.hpp>

#include "common.hpp"

namespace kiln::cli {

// Text: each item's text, then the summary's. --json: one document,
//   {"<key>": [item, ...], <the summary's other fields>}
// and when the verb fails after the first item, {"<key>": [...], "error": {...}} instead.
class StreamedListing {
 public:
  StreamedListing(const Flags &flags, std::string key) : json_(flags.json), key_(std::move(key)) {}
  StreamedListing(const StreamedListing &) = delete;
  StreamedListing &operator=(const StreamedListing &) = delete;

  // One item: `as_json()` or `as_text()` is called, whichever the output is (not both: a store's
  // findings may number a million).
  template <class Json, class Text>
  void item(Json as_json, Text as_text) {
    open();
    json_ ? write_json(as_json()) : write_text(as_text());
  }
  // `summary`'s field named like the list (empty: the items went here) is left out.
  void finish(const nlohmann::json &summary, const std::string &text);
  // For an error thrown by the verb: rethrows it when nothing was written yet (the CLI reports
  // it as for any verb); else closes the document with it, says it on stderr and returns its
  // exit code.
  int fail(const std::exception &error);

 private:
  void open();
  void write_json(const nlohmann::json &value);
  void write_text(const std::string &text);

  bool json_;
  std::string key_;
  bool opened_ = false;
  bool first_ = true;
};

}  // namespace kiln::cli
