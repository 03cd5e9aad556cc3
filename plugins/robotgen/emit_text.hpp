// Text pieces the header emitters share: numbers written so that they read back exactly,
// C string literals, comment-safe text, linear combinations with the zero terms dropped, an
// indenting line writer, and the hash that names a header's inline namespace.
#pragma once

#include <cstdint>
#include <sstream>
#include <string>
#include <utility>
#include <vector>

#include "urdf_chain.hpp"

namespace kiln::robotgen {

// The shortest decimal form that reads back as the same double, always with a '.' or an 'e'.
std::string number(double value);
// number(value) as a literal of the generated code's scalar type T.
std::string lit(double value);
// A C string literal (names are identifiers in practice; anything else is escaped).
std::string quoted(const std::string &text);
// A comment-safe copy of text (no "*/", no newlines).
std::string comment_safe(const std::string &text);

// sum of coefficient * symbol, dropping exact zeros; "" when every term is zero. A symbol ""
// stands for the constant 1 (the term is written as the literal alone).
std::string linear(const std::vector<std::pair<double, std::string>> &terms);
// As linear, but "static_cast<T>(0.0)" when every term is zero.
std::string linear_or_zero(const std::vector<std::pair<double, std::string>> &terms);

// FNV-1a 64 over the text: the inline namespace's tag.
std::uint64_t fnv1a(const std::string &text);

// A generated header's `static <hd> void sincos_(type a, type &s, type &c)`: the device's
// `::<device_function>` under __CUDA_ARCH__, std::sin/std::cos on the host.
std::string sincos_helper(const std::string &hd_macro, const std::string &type, const std::string &device_function);

// The rest of a generated header after its comment and tag: <cmath>, the host/device macro
// hd_macro (unless the includer defined it), and body inside namespace ns, inline namespace tag.
std::string namespaced_body(const std::string &hd_macro, const std::string &ns, const std::string &tag,
                            const std::string &body);

// The first line of a generated header: generator, URDF, robot, chain and joint count.
// The model's canonical text as a static array in section .kiln.model of every object that
// includes the header (once per translation unit; none in device code): kiln reads it from the
// built plugin to record and check the model's fingerprint. "" when chain.model_text is empty.
std::string model_record(const Chain &chain);

std::string provenance_line(const std::string &generator, const std::string &source, const std::string &robot,
                            const std::string &base, const std::string &tip, std::size_t joints);

// The opening of a generated `struct Chain`: kDof, the generator, the URDF, the chain's names
// and the joint-type constants; joint_types_note is the parenthesis of their comment.
void open_chain_struct(std::ostringstream &s, const Chain &chain, const std::string &generator,
                       const std::string &joint_types_note);

// `  static constexpr <type> <name>[kDof] = {item(joint 0), ...};`
template <class Item>
void joint_list(std::ostringstream &s, const Chain &chain, const std::string &type, const std::string &name,
                Item &&item) {
  s << "  static constexpr " << type << (type.back() == '*' ? "" : " ") << name << "[kDof] = {";
  for (std::size_t j = 0; j < chain.joints.size(); ++j) s << (j ? ", " : "") << item(chain.joints[j]);
  s << "};\n";
}

class Body {
 public:
  explicit Body(int indent) : indent_(indent) {}
  void line(const std::string &text) { out_ << std::string(static_cast<std::size_t>(indent_), ' ') << text << '\n'; }
  void open(const std::string &text) {
    line(text);
    indent_ += 2;
  }
  void close(const std::string &text = "}") {
    indent_ -= 2;
    line(text);
  }
  std::string str() const { return out_.str(); }

 private:
  std::ostringstream out_;
  int indent_;
};

}  // namespace kiln::robotgen
