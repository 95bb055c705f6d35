#pragma once
/// \file Test fixture: a real redis-server on a free loopback port, started by the constructor and
/// killed by the destructor, plus a raw hiredis client for planting values behind cotune's back.

#include <cerrno>
#include <chrono>
#include <csignal>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <memory>
#include <optional>
#include <sstream>
#include <stdexcept>
#include <string>
#include <string_view>
#include <thread>
#include <vector>

#include <fcntl.h>
#include <netinet/in.h>
#include <sys/prctl.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

#include <fmt/format.h>
#include <hiredis/hiredis.h>

#include <cotune/redis/redis_backend.hpp>

#include "../support/temp_dir.hpp"

namespace cotune_test {

/// A port nobody listens on right now (the kernel's choice for a socket bound to port 0).
inline int free_loopback_port() {
  int fd = ::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
  if (fd < 0) throw std::runtime_error(fmt::format("socket: {}", std::strerror(errno)));
  sockaddr_in addr{};
  addr.sin_family = AF_INET;
  addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  addr.sin_port = 0;
  socklen_t len = sizeof addr;
  if (::bind(fd, reinterpret_cast<sockaddr*>(&addr), sizeof addr) != 0 ||
      ::getsockname(fd, reinterpret_cast<sockaddr*>(&addr), &len) != 0) {
    ::close(fd);
    throw std::runtime_error(fmt::format("cannot find a free port: {}", std::strerror(errno)));
  }
  ::close(fd);
  return ntohs(addr.sin_port);
}

/// A raw hiredis connection, for planting values and checking keys without cotune in the way.
class raw_client {
public:
  explicit raw_client(int port) {
    timeval tv{2, 0};
    context_.reset(::redisConnectWithTimeout("127.0.0.1", port, tv));
    if (!context_ || context_->err)
      throw std::runtime_error(fmt::format("raw client: cannot connect to 127.0.0.1:{}: {}", port,
                                           context_ ? context_->errstr : "out of memory"));
    ::redisSetTimeout(context_.get(), tv);
  }
  /// Runs one command (argv form); throws on an I/O error.
  cotune::redis::redis_reply operator()(std::vector<std::string_view> argv) {
    std::vector<const char*> ptrs;
    std::vector<std::size_t> lens;
    for (auto a : argv) {
      ptrs.push_back(a.data());
      lens.push_back(a.size());
    }
    auto* raw = static_cast<redisReply*>(
        ::redisCommandArgv(context_.get(), static_cast<int>(argv.size()), ptrs.data(), lens.data()));
    if (!raw) throw std::runtime_error(fmt::format("raw client: {} failed: {}", argv.at(0), context_->errstr));
    auto reply = cotune::redis::detail::copy_reply(raw);
    ::freeReplyObject(raw);
    return reply;
  }

private:
  cotune::redis::detail::context_ptr context_;
};

/// redis-server on 127.0.0.1 at a free port, without persistence, killed on destruction. Throws
/// with instructions when redis-server is not installed.
class redis_server {
public:
  explicit redis_server(std::vector<std::string> extra_args = {}) {
    const std::string exe = find_executable("redis-server");
    // Another process may take the free port between our probe and redis-server's bind: retry.
    std::string failure;
    for (int attempt = 0; attempt < 5; ++attempt) {
      port_ = free_loopback_port();
      if (start(exe, extra_args, failure)) return;
    }
    throw std::runtime_error(fmt::format("redis-server did not start: {}", failure));
  }
  redis_server(const redis_server&) = delete;
  redis_server& operator=(const redis_server&) = delete;
  ~redis_server() { kill_now(); }

  [[nodiscard]] int port() const noexcept { return port_; }
  [[nodiscard]] pid_t pid() const noexcept { return pid_; }
  [[nodiscard]] std::string url() const { return fmt::format("redis://127.0.0.1:{}", port_); }
  /// Options for a backend talking to this server (test-sized timeouts and backoff).
  [[nodiscard]] cotune::redis::redis_options options() const {
    cotune::redis::redis_options o;
    o.endpoint = cotune::redis::parse_redis_url(url());
    o.prefix = "test";
    o.connect_timeout = std::chrono::milliseconds(100);
    o.timeout = std::chrono::milliseconds(1000);
    o.backoff = std::chrono::milliseconds(60000);
    return o;
  }
  [[nodiscard]] raw_client client() const { return raw_client(port_); }

  /// SIGSTOP: the server keeps its sockets but answers nothing until `resume`.
  void freeze() { ::kill(pid_, SIGSTOP); }
  void resume() { ::kill(pid_, SIGCONT); }
  /// Kills the server now (SIGKILL) and reaps it.
  void kill_now() {
    if (pid_ <= 0) return;
    ::kill(pid_, SIGKILL);
    int status = 0;
    while (::waitpid(pid_, &status, 0) < 0 && errno == EINTR) {
    }
    pid_ = -1;
  }

private:
  static std::string find_executable(const std::string& name) {
    const char* path = std::getenv("PATH");
    std::stringstream dirs(std::string(path ? path : "") + ":/usr/bin:/usr/sbin:/usr/local/bin");
    for (std::string dir; std::getline(dirs, dir, ':');) {
      if (dir.empty()) continue;
      auto candidate = std::filesystem::path(dir) / name;
      if (::access(candidate.c_str(), X_OK) == 0) return candidate.string();
    }
    throw std::runtime_error(name + " is not installed, and the Redis tests need a real server on loopback: "
                                    "run scripts/install-deps (or apt-get install redis-server)");
  }

  bool start(const std::string& exe, const std::vector<std::string>& extra, std::string& failure) {
    const std::string log = (dir_.path() / "redis.log").string();
    std::vector<std::string> args{exe,          "--port",       std::to_string(port_), "--bind", "127.0.0.1",
                                  "--save",     "",             "--appendonly",        "no",     "--daemonize",
                                  "no",         "--dir",        dir_.string(),    "--logfile", log};
    args.insert(args.end(), extra.begin(), extra.end());
    std::vector<char*> argv;
    for (auto& a : args) argv.push_back(a.data());
    argv.push_back(nullptr);
    const pid_t parent = ::getpid();
    pid_ = ::fork();
    if (pid_ < 0) throw std::runtime_error(fmt::format("fork: {}", std::strerror(errno)));
    if (pid_ == 0) {
      // Dies with the test process, even if it crashes before the destructor runs.
      ::prctl(PR_SET_PDEATHSIG, SIGKILL);
      if (::getppid() != parent) ::_exit(127);
      int null = ::open("/dev/null", O_RDWR);
      if (null >= 0) {
        ::dup2(null, 0);
        ::dup2(null, 1);
        ::dup2(null, 2);
      }
      ::execv(argv[0], argv.data());
      ::_exit(127);
    }
    const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(10);
    while (std::chrono::steady_clock::now() < deadline) {
      int status = 0;
      if (::waitpid(pid_, &status, WNOHANG) == pid_) {
        std::ifstream in(log);
        std::stringstream text;
        text << in.rdbuf();
        failure = fmt::format("redis-server on port {} exited (status {}); its log:\n{}", port_, status, text.str());
        pid_ = -1;
        return false;
      }
      timeval tv{0, 200000};
      cotune::redis::detail::context_ptr c(::redisConnectWithTimeout("127.0.0.1", port_, tv));
      if (c && !c->err) {
        ::redisSetTimeout(c.get(), tv);
        const char* ping = "PING";
        const std::size_t ping_len = 4;
        auto* reply = static_cast<redisReply*>(::redisCommandArgv(c.get(), 1, &ping, &ping_len));
        // Any reply means it serves commands (with --requirepass it is a NOAUTH error).
        const bool answered = reply != nullptr;
        if (reply) ::freeReplyObject(reply);
        if (answered) return true;
      }
      std::this_thread::sleep_for(std::chrono::milliseconds(10));
    }
    kill_now();
    failure = fmt::format("redis-server on port {} did not answer PING within 10 s", port_);
    return false;
  }

  temp_dir dir_{"cotune-redis"};
  int port_ = 0;
  pid_t pid_ = -1;
};

/// Resumes a frozen server when the scope ends, even if an assertion fails first.
struct resume_on_exit {
  redis_server& server;
  ~resume_on_exit() { server.resume(); }
};

} // namespace cotune_test
