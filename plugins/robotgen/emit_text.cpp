#include "emit_text.hpp"

#include <cstdio>
#include <cstdlib>

namespace kiln::robotgen {

std::string number(double value) {
  if (value == 0) return "0.0";
  char buffer[40];
  for (int precision = 1; precision <= 17; ++precision) {
    std::snprintf(buffer, sizeof buffer, "%.*g", precision, value);
    if (std::strtod(buffer, nullptr) == value) break;
  }
  std::string text = buffer;
  if (text.find_first_of(".eEn") == std::string::npos) text += ".0";
  return text;
}

std::string lit(double value) { return "static_cast<T>(" + number(value) + ")"; }

std::string quoted(const std::string &text) {
  std::string out = "\"";
  for (const char c : text) {
    if (c == '"' || c == '\\') {
      out += '\\';
      out += c;
    } else if (static_cast<unsigned char>(c) < 0x20 || static_cast<unsigned char>(c) >= 0x7f) {
      char buffer[8];
      std::snprintf(buffer, sizeof buffer, "\\%03o", static_cast<unsigned>(static_cast<unsigned char>(c)));
      out += buffer;
    } else {
      out += c;
    }
  }
  return out + "\"";
}

std::string comment_safe(const std::string &text) {
  std::string out;
  for (std::size_t i = 0; i < text.size(); ++i) {
    const char c = text[i];
    if (c == '\n' || c == '\r') {
      out += ' ';
    } else if (c == '*' && i + 1 < text.size() && text[i + 1] == '/') {
      out += "* ";
    } else {
      out += c;
    }
  }
  return out;
}

std::string linear(const std::vector<std::pair<double, std::string>> &terms) {
  std::string out;
  for (const auto &term : terms) {
    if (term.first == 0) continue;
    std::string piece;
    bool negative = false;
    if (term.second.empty()) {
      // A constant: the literal itself, its sign folded into the +/-.
      negative = term.first < 0;
      piece = lit(negative ? -term.first : term.first);
    } else if (term.first == 1) {
      piece = term.second;
    } else if (term.first == -1) {
      piece = term.second;
      negative = true;
    } else {
      piece = term.second + " * " + lit(term.first);
    }
    if (out.empty()) {
      out = negative ? "-" + piece : piece;
    } else {
      out += negative ? " - " + piece : " + " + piece;
    }
  }
  return out;
}

std::string linear_or_zero(const std::vector<std::pair<double, std::string>> &terms) {
  const std::string sum = linear(terms);
  return sum.empty() ? "static_cast<T>(0.0)" : sum;
}

std::uint64_t fnv1a(const std::string &text) {
  std::uint64_t hash = 0xcbf29ce484222325ull;
  for (const char c : text) {
    hash ^= static_cast<unsigned char>(c);
    hash *= 0x100000001b3ull;
  }
  return hash;
}

}  // namespace kiln::robotgen
