// Remote cache servers that answer in wrong-but-legal ways, in-process on 127.0.0.1 (a port from
// the kernel; nothing else is ever listened on or connected to): a Redis that speaks RESP and a
// WebDAV server that speaks HTTP/1.1, each answering every request with whatever the case's
// `answer` function returns. Unlike the real servers of support/remote_servers.hpp they need
// nothing installed, so the cases using them run everywhere.
//
//   kiln::test::FakeRedis redis([](const std::vector<std::string> &command) -> std::string {
//     if (command[0] == "SET") return "$-1\r\n";   // SET NX: "someone holds it"
//     return "$-1\r\n";                             // GET: "nobody holds it"
//   });
//   ... KILN_REMOTE = redis.url() ...
//
// Each server gives up after `give_up_after` (then answers every request with an error, so a
// client that never stops asking ends instead of hanging the test) and says whether it did.
#pragma once

#include <atomic>
#include <chrono>
#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

namespace kiln::test {

// Accepts connections on 127.0.0.1 and runs `serve(fd)` for each on a thread of its own, until
// destroyed (connections are shut down then).
class LoopbackServer {
 public:
  explicit LoopbackServer(std::function<void(int fd)> serve);
  ~LoopbackServer();
  LoopbackServer(const LoopbackServer &) = delete;
  LoopbackServer &operator=(const LoopbackServer &) = delete;
  int port() const { return port_; }
  bool stopping() const { return stop_.load(); }

 private:
  void accept_loop();
  std::function<void(int)> serve_;
  int listener_ = -1;
  int port_ = 0;
  std::atomic<bool> stop_{false};
  std::mutex mutex_;
  std::vector<int> clients_;
  std::vector<std::thread> threads_;
  std::thread acceptor_;
};

// What a fake server was asked, and whether it gave up.
class FakeServerLog {
 public:
  void count(const std::string &what);
  int count_of(const std::string &what) const;
  int total() const;
  bool gave_up() const { return gave_up_.load(); }
  void give_up() { gave_up_ = true; }

 private:
  mutable std::mutex mutex_;
  std::map<std::string, int> counts_;
  std::atomic<bool> gave_up_{false};
};

// A Redis: each command (its words) gets the raw RESP bytes `answer` returns, sent as they are
// (an empty string: no answer at all; the connection stays open).
class FakeRedis {
 public:
  using Answer = std::function<std::string(const std::vector<std::string> &command)>;
  explicit FakeRedis(Answer answer, std::chrono::milliseconds give_up_after = std::chrono::seconds(8));
  std::string url() const;  // redis://127.0.0.1:PORT/0
  const FakeServerLog &log() const { return *log_; }

 private:
  std::shared_ptr<FakeServerLog> log_ = std::make_shared<FakeServerLog>();
  LoopbackServer server_;
};

// An HTTP/1.1 server: each request gets the status, body and headers `answer` returns.
class FakeHttp {
 public:
  struct Request {
    std::string method, path;
    std::map<std::string, std::string> headers;  // by lower-case name
    std::string body;
  };
  struct Reply {
    Reply(int status_ = 404, std::string body_ = "", std::vector<std::pair<std::string, std::string>> headers_ = {})
        : status(status_), body(std::move(body_)), headers(std::move(headers_)) {}
    int status;
    std::string body;
    std::vector<std::pair<std::string, std::string>> headers;
  };
  using Answer = std::function<Reply(const std::string &method, const std::string &path)>;
  using RequestAnswer = std::function<Reply(const Request &request)>;
  explicit FakeHttp(Answer answer, std::chrono::milliseconds give_up_after = std::chrono::seconds(8));
  explicit FakeHttp(RequestAnswer answer, std::chrono::milliseconds give_up_after = std::chrono::seconds(8));
  std::string url() const;  // http://127.0.0.1:PORT/kiln
  const FakeServerLog &log() const { return *log_; }

 private:
  std::shared_ptr<FakeServerLog> log_ = std::make_shared<FakeServerLog>();
  LoopbackServer server_;
};

}  // namespace kiln::test
