#include "remote/lease_holder.hpp"

#include <errno.h>
#include <signal.h>
#include <unistd.h>

#include <cctype>
#include <fstream>
#include <random>
#include <vector>

namespace kiln::remote {
namespace {

// The kernel's boot id ("6f1c...-..."), empty when /proc does not give it.
std::string read_boot_id() {
  std::ifstream in("/proc/sys/kernel/random/boot_id");
  std::string id;
  std::getline(in, id);
  if (id.size() != 36) return "";
  for (const char c : id) {
    if (!std::isxdigit(static_cast<unsigned char>(c)) && c != '-') return "";
  }
  return id;
}

// The inode of this process's pid namespace ("pid:[4026531836]" -> "4026531836"), or empty.
std::string read_pid_namespace() {
  char link[64] = {};
  const ssize_t length = ::readlink("/proc/self/ns/pid", link, sizeof link - 1);
  if (length <= 0) return "";
  const std::string text(link, static_cast<std::size_t>(length));
  const std::size_t open = text.find('['), close = text.find(']');
  if (text.rfind("pid:[", 0) != 0 || close == std::string::npos || close <= open + 1) return "";
  return text.substr(open + 1, close - open - 1);
}

struct Here {
  std::string boot_id = read_boot_id();
  std::string pid_namespace = read_pid_namespace();
  bool known() const { return !boot_id.empty() && !pid_namespace.empty(); }
};
const Here &here() {
  static const Here found;
  return found;
}

// 1 to max_digits decimal digits.
bool decimal(const std::string &text, std::size_t max_digits) {
  return !text.empty() && text.size() <= max_digits && text.find_first_not_of("0123456789") == std::string::npos;
}

}  // namespace

std::string lease_holder_name() {
  char host[256] = {};
  if (::gethostname(host, sizeof host - 1) != 0) host[0] = '\0';
  std::random_device random;
  std::string name = std::string(host[0] != '\0' ? host : "host") + ":" + std::to_string(::getpid()) + ":" +
                     std::to_string(random());
  if (here().known()) name += ":" + here().boot_id + ":" + here().pid_namespace;
  return name;
}

bool lease_holder_gone(const std::string &holder) {
  if (!here().known()) return false;
  const std::string name = holder.substr(0, holder.find_first_of(" \t\r\n"));
  // The last four fields from the right (a hostname set with sethostname may hold a ':').
  std::vector<std::string> fields;
  std::size_t end = name.size();
  for (int i = 0; i < 4; ++i) {
    const std::size_t colon = end == 0 ? std::string::npos : name.rfind(':', end - 1);
    if (colon == std::string::npos) return false;
    fields.push_back(name.substr(colon + 1, end - colon - 1));
    end = colon;
  }
  const std::string &pid_namespace = fields[0], &boot_id = fields[1], &random = fields[2], &pid = fields[3];
  if (end == 0 || boot_id != here().boot_id || pid_namespace != here().pid_namespace) return false;  // end 0: no host
  if (!decimal(random, 20) || !decimal(pid, 9)) return false;
  const long number = std::stol(pid);
  if (number <= 1 || number == ::getpid()) return false;  // never kill(0 or -1); init and we live
  return ::kill(static_cast<pid_t>(number), 0) != 0 && errno == ESRCH;
}

}  // namespace kiln::remote
