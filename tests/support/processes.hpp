#pragma once
// Test helpers: whether a process is still alive, and waiting for one to go.

#include <chrono>
#include <fstream>
#include <string>
#include <thread>

#include <sys/types.h>

namespace cotune_test {

/// True while `pid` names a live (not zombie) process.
inline bool alive(pid_t pid) {
  std::ifstream stat("/proc/" + std::to_string(pid) + "/stat");
  std::string line;
  if (!std::getline(stat, line)) return false;
  const auto close = line.rfind(')');
  return close != std::string::npos && close + 2 < line.size() && line[close + 2] != 'Z';
}

/// Waits (up to 5 s) for `pid` to be gone: a killed process may take a moment to be reaped.
inline bool gone_soon(pid_t pid) {
  for (int i = 0; i < 250 && alive(pid); ++i) std::this_thread::sleep_for(std::chrono::milliseconds(20));
  return !alive(pid);
}

} // namespace cotune_test
