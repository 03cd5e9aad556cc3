#include "support/fake_remotes.hpp"

#include <netinet/in.h>
#include <poll.h>
#include <strings.h>
#include <sys/socket.h>
#include <unistd.h>

#include <cctype>
#include <cstdlib>
#include <optional>
#include <stdexcept>

namespace kiln::test {
namespace {

using Clock = std::chrono::steady_clock;

bool send_all(int fd, const std::string &bytes) {
  std::size_t done = 0;
  while (done < bytes.size()) {
    const ssize_t sent = ::send(fd, bytes.data() + done, bytes.size() - done, MSG_NOSIGNAL);
    if (sent <= 0) return false;
    done += static_cast<std::size_t>(sent);
  }
  return true;
}

// Reads more of the connection into `buffer`; false at its end (or the server's).
bool read_more(int fd, std::string &buffer, const LoopbackServer &server) {
  while (!server.stopping()) {
    pollfd ready{fd, POLLIN, 0};
    if (::poll(&ready, 1, 50) != 1) continue;
    char chunk[65536];
    const ssize_t got = ::recv(fd, chunk, sizeof chunk, 0);
    if (got <= 0) return false;
    buffer.append(chunk, static_cast<std::size_t>(got));
    return true;
  }
  return false;
}

// The bytes up to the next CRLF from `at` (moved past it); nullopt until a whole line is there.
std::optional<std::string> line_at(const std::string &buffer, std::size_t &at) {
  const auto end = buffer.find("\r\n", at);
  if (end == std::string::npos) return std::nullopt;
  std::string line = buffer.substr(at, end - at);
  at = end + 2;
  return line;
}

// One RESP command (an array of bulk strings, as hiredis sends) from the front of `buffer`,
// removed from it; nullopt until all of it arrived.
std::optional<std::vector<std::string>> resp_command(std::string &buffer) {
  std::size_t at = 0;
  const auto header = line_at(buffer, at);
  if (!header) return std::nullopt;
  if (header->empty() || (*header)[0] != '*') throw std::runtime_error("not a RESP command: " + *header);
  const long count = std::strtol(header->c_str() + 1, nullptr, 10);
  std::vector<std::string> words;
  for (long i = 0; i < count; ++i) {
    const auto length_line = line_at(buffer, at);
    if (!length_line) return std::nullopt;
    const auto length = static_cast<std::size_t>(std::strtoul(length_line->c_str() + 1, nullptr, 10));
    if (buffer.size() < at + length + 2) return std::nullopt;
    words.push_back(buffer.substr(at, length));
    at += length + 2;
  }
  buffer.erase(0, at);
  return words;
}

using HttpRequest = FakeHttp::Request;

// One HTTP request from the front of `buffer`, removed from it; nullopt until all of it
// arrived. `continue_sent` answers "Expect: 100-continue" once.
std::optional<HttpRequest> http_request(std::string &buffer, int fd, bool &continue_sent) {
  const auto end = buffer.find("\r\n\r\n");
  if (end == std::string::npos) return std::nullopt;
  const std::string head = buffer.substr(0, end);
  HttpRequest request;
  const auto space = head.find(' ');
  request.method = head.substr(0, space);
  request.path = head.substr(space + 1, head.find(' ', space + 1) - space - 1);
  std::size_t length = 0;
  bool expect = false;
  for (std::size_t at = head.find("\r\n"); at != std::string::npos; at = head.find("\r\n", at + 2)) {
    const std::string header = head.substr(at + 2, head.find("\r\n", at + 2) - at - 2);
    if (strncasecmp(header.c_str(), "content-length:", 15) == 0) length = std::strtoul(header.c_str() + 15, nullptr, 10);
    if (strncasecmp(header.c_str(), "expect: 100-continue", 20) == 0) expect = true;
    const auto colon = header.find(':');
    if (colon == std::string::npos) continue;
    std::string name = header.substr(0, colon);
    for (char &c : name) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
    const auto value = header.find_first_not_of(' ', colon + 1);
    request.headers[name] = value == std::string::npos ? std::string() : header.substr(value);
  }
  if (expect && !continue_sent) {
    continue_sent = true;
    send_all(fd, "HTTP/1.1 100 Continue\r\n\r\n");
  }
  if (buffer.size() < end + 4 + length) return std::nullopt;
  request.body = buffer.substr(end + 4, length);
  buffer.erase(0, end + 4 + length);
  continue_sent = false;
  return request;
}

const char *http_reason(int status) {
  switch (status) {
    case 200: return "OK";
    case 201: return "Created";
    case 204: return "No Content";
    case 403: return "Forbidden";
    case 404: return "Not Found";
    case 405: return "Not Allowed";
    case 409: return "Conflict";
    case 412: return "Precondition Failed";
    default: return "Fake";
  }
}

}  // namespace

LoopbackServer::LoopbackServer(std::function<void(int fd)> serve) : serve_(std::move(serve)) {
  listener_ = ::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
  sockaddr_in address{};
  address.sin_family = AF_INET;
  address.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  socklen_t size = sizeof address;
  if (listener_ < 0 || ::bind(listener_, reinterpret_cast<sockaddr *>(&address), sizeof address) != 0 ||
      ::listen(listener_, 64) != 0 || ::getsockname(listener_, reinterpret_cast<sockaddr *>(&address), &size) != 0) {
    throw std::runtime_error("cannot listen on 127.0.0.1");
  }
  port_ = ntohs(address.sin_port);
  acceptor_ = std::thread([this] { accept_loop(); });
}

LoopbackServer::~LoopbackServer() {
  stop_ = true;
  acceptor_.join();
  {
    std::lock_guard<std::mutex> guard(mutex_);
    for (int fd : clients_) ::shutdown(fd, SHUT_RDWR);
  }
  for (auto &thread : threads_) thread.join();
  for (int fd : clients_) ::close(fd);
  ::close(listener_);
}

void LoopbackServer::accept_loop() {
  while (!stop_) {
    pollfd ready{listener_, POLLIN, 0};
    if (::poll(&ready, 1, 50) != 1) continue;
    const int client = ::accept4(listener_, nullptr, nullptr, SOCK_CLOEXEC);
    if (client < 0) continue;
    std::lock_guard<std::mutex> guard(mutex_);
    clients_.push_back(client);
    threads_.emplace_back([this, client] {
      try {
        serve_(client);
      } catch (const std::exception &) {
        // A client that spoke something else: its connection ends.
      }
      ::shutdown(client, SHUT_RDWR);
    });
  }
}

void FakeServerLog::count(const std::string &what) {
  std::lock_guard<std::mutex> guard(mutex_);
  ++counts_[what];
}

int FakeServerLog::count_of(const std::string &what) const {
  std::lock_guard<std::mutex> guard(mutex_);
  const auto it = counts_.find(what);
  return it == counts_.end() ? 0 : it->second;
}

int FakeServerLog::total() const {
  std::lock_guard<std::mutex> guard(mutex_);
  int sum = 0;
  for (const auto &item : counts_) sum += item.second;
  return sum;
}

FakeRedis::FakeRedis(Answer answer, std::chrono::milliseconds give_up_after)
    : server_([log = log_, answer = std::move(answer), until = Clock::now() + give_up_after, this](int fd) {
        std::string buffer;
        while (read_more(fd, buffer, server_)) {
          while (auto command = resp_command(buffer)) {
            if (command->empty()) continue;
            log->count((*command)[0]);
            if (Clock::now() > until) log->give_up();
            const std::string reply = log->gave_up() ? "-ERR the fake server gave up\r\n" : answer(*command);
            if (!reply.empty() && !send_all(fd, reply)) return;
          }
        }
      }) {}

std::string FakeRedis::url() const { return "redis://127.0.0.1:" + std::to_string(server_.port()) + "/0"; }

FakeHttp::FakeHttp(Answer answer, std::chrono::milliseconds give_up_after)
    : FakeHttp(RequestAnswer([answer = std::move(answer)](const Request &request) {
                 return answer(request.method, request.path);
               }),
               give_up_after) {}

FakeHttp::FakeHttp(RequestAnswer answer, std::chrono::milliseconds give_up_after)
    : server_([log = log_, answer = std::move(answer), until = Clock::now() + give_up_after, this](int fd) {
        std::string buffer;
        bool continue_sent = false;
        while (read_more(fd, buffer, server_)) {
          while (auto request = http_request(buffer, fd, continue_sent)) {
            log->count(request->method);
            if (Clock::now() > until) log->give_up();
            const Reply reply = log->gave_up() ? Reply{500, "the fake server gave up"}
                                               : answer(*request);
            std::string bytes = "HTTP/1.1 " + std::to_string(reply.status) + " " + http_reason(reply.status) +
                                "\r\nContent-Length: " + std::to_string(reply.body.size()) + "\r\n";
            for (const auto &[name, value] : reply.headers) bytes += name + ": " + value + "\r\n";
            bytes += "\r\n";
            if (request->method != "HEAD") bytes += reply.body;
            if (!send_all(fd, bytes)) return;
          }
        }
      }) {}

std::string FakeHttp::url() const { return "http://127.0.0.1:" + std::to_string(server_.port()) + "/kiln"; }

}  // namespace kiln::test
