// Runs a tool of this build (cke-run: CKE_RUN_BIN) and captures exit code and output.
#pragma once

#include <sys/wait.h>

#include <array>
#include <cstdio>
#include <string>

namespace cke::test {

struct CliResult {
  int code;
  std::string out;  // the stream selected by `which`
};

// which = "2>&1 >/dev/null" keeps stderr; ">/dev/null 2>&1"... callers pass the redirection.
inline CliResult run_tool(const std::string& bin, const std::string& args,
                          const std::string& redirect) {
  const std::string cmd = bin + " " + args + " " + redirect;
  std::string out;
  FILE* p = popen(cmd.c_str(), "r");
  std::array<char, 4096> buf;
  while (p && fgets(buf.data(), buf.size(), p)) out += buf.data();
  const int st = p ? pclose(p) : -1;
  return {WIFEXITED(st) ? WEXITSTATUS(st) : -1, out};
}

#ifdef CKE_RUN_BIN
inline CliResult run_cli(const std::string& args, const std::string& redirect = "2>&1 >/dev/null") {
  return run_tool(CKE_RUN_BIN, args, redirect);
}
#endif

}  // namespace cke::test
