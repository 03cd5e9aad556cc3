// kiln: the out-of-line parts of the typed errors (include/kiln/errors.hpp).
#include <kiln/errors.hpp>

#include <utility>

namespace kiln {
namespace {

std::string incompatible_message(const std::string &what_was_checked,
                                 const std::vector<Reason> &reasons) {
  std::string message = what_was_checked;
  for (std::size_t i = 0; i < reasons.size(); ++i) {
    message += i == 0 ? ": " : "; ";
    message += reasons[i].to_string();
  }
  return message;
}

}  // namespace

std::string Reason::to_string() const {
  std::string text = field + ": recorded " + recorded + ", current " + current;
  if (!note.empty()) text += " (" + note + ")";
  return text;
}

IncompatibleError::IncompatibleError(const std::string &what_was_checked,
                                     std::vector<Reason> reasons)
    : Error(ErrorKind::incompatible, incompatible_message(what_was_checked, reasons)),
      reasons_(std::move(reasons)) {}

}  // namespace kiln
