#include "support/processes.hpp"

#include <fstream>
#include <sstream>

namespace kiln::test {

std::pair<char, std::string> state_and_start(pid_t pid) {
  std::ifstream in("/proc/" + std::to_string(pid) + "/stat");
  std::string line;
  if (!std::getline(in, line)) return {'\0', ""};
  const std::size_t close = line.rfind(')');
  if (close == std::string::npos) return {'\0', ""};
  std::istringstream fields(line.substr(close + 2));
  std::string field, state;
  fields >> state;
  for (int index = 4; index <= 22 && fields >> field; ++index) {
  }
  return {state.empty() ? '\0' : state[0], field};
}

pid_t parent_of(pid_t pid) {
  std::ifstream in("/proc/" + std::to_string(pid) + "/stat");
  std::string line;
  if (!std::getline(in, line)) return 0;
  const std::size_t close = line.rfind(')');
  if (close == std::string::npos) return 0;
  std::istringstream fields(line.substr(close + 2));
  std::string state;
  pid_t parent = 0;
  fields >> state >> parent;
  return parent;
}

std::string command_name(pid_t pid) {
  std::ifstream in("/proc/" + std::to_string(pid) + "/comm");
  std::string name;
  std::getline(in, name);
  return name;
}

std::vector<Seen> lineage(pid_t pid, pid_t top) {
  std::vector<Seen> chain;
  for (pid_t at = pid; at > 1 && at != top && chain.size() < 64; at = parent_of(at)) chain.push_back(seen(at));
  return chain;
}

bool running(const Seen &seen) {
  const auto [state, started] = state_and_start(seen.pid);
  return state != '\0' && state != 'Z' && started == seen.started;
}

}  // namespace kiln::test
