// Runs the cke-server binary of this build (CKE_SERVER_BIN) on a free port for a test:
// --port 0, the port read back from its "listening on" line; stopped with SIGTERM.
#pragma once

#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <fstream>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

namespace cke::test {

class ServerProcess {
 public:
  // Starts the server; false (and log() says why) when it does not listen within 60 s.
  bool start(const std::vector<std::string>& args) {
    log_path_ = "/tmp/cke-server-test-" + std::to_string(getpid()) + "-" +
                std::to_string(counter()++) + ".log";
    // A log left by an earlier run whose process had this pid would be read before the
    // child truncates it, and its old "listening on" line taken for this server's port.
    // Create it empty here, before the child exists.
    std::ofstream(log_path_, std::ios::trunc).close();
    pid_ = fork();
    if (pid_ == 0) {
      std::vector<std::string> all = {CKE_SERVER_BIN, "--port", "0"};
      all.insert(all.end(), args.begin(), args.end());
      std::vector<char*> argv;
      for (auto& a : all) argv.push_back(a.data());
      argv.push_back(nullptr);
      FILE* f = freopen(log_path_.c_str(), "a", stderr);
      (void)f;
      execv(CKE_SERVER_BIN, argv.data());
      _exit(127);
    }
    const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(60);
    while (std::chrono::steady_clock::now() < deadline) {
      const std::string l = log();
      const size_t at = l.find("listening on http://");
      if (at != std::string::npos) {
        const size_t colon = l.find(':', at + 20);
        const size_t eol = l.find('\n', colon);
        if (eol != std::string::npos) {
          port_ = std::stoi(l.substr(colon + 1, eol - colon - 1));
          return true;
        }
      }
      int st = 0;
      if (waitpid(pid_, &st, WNOHANG) == pid_) {
        pid_ = -1;
        return false;
      }
      std::this_thread::sleep_for(std::chrono::milliseconds(20));
    }
    return false;
  }

  // SIGTERM, then the exit code (-1 when it did not exit within `wait_s`; it is then killed).
  int stop(int wait_s = 30) {
    if (pid_ <= 0) return -1;
    kill(pid_, SIGTERM);
    const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(wait_s);
    while (std::chrono::steady_clock::now() < deadline) {
      int st = 0;
      if (waitpid(pid_, &st, WNOHANG) == pid_) {
        pid_ = -1;
        return WIFEXITED(st) ? WEXITSTATUS(st) : -1;
      }
      std::this_thread::sleep_for(std::chrono::milliseconds(20));
    }
    kill(pid_, SIGKILL);
    waitpid(pid_, nullptr, 0);
    pid_ = -1;
    return -1;
  }

  ~ServerProcess() { stop(); }

  int port() const { return port_; }
  pid_t pid() const { return pid_; }
  std::string log() const {
    std::ifstream f(log_path_);
    std::stringstream ss;
    ss << f.rdbuf();
    return ss.str();
  }

 private:
  static int& counter() {
    static int n = 0;
    return n;
  }
  pid_t pid_ = -1;
  int port_ = 0;
  std::string log_path_;
};

}  // namespace cke::test
