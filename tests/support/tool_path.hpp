#pragma once
/// \file Test helper: where the built `cotune` tool is, for the tests that run it as a real process.
///
/// Header-only; include it with a relative path ("../support/tool_path.hpp").

#include <cstdlib>
#include <filesystem>
#include <string>

namespace cotune_test {

/// The built tool: COTUNE_TOOL from the build, else <build>/tools/cotune beside <build>/tests.
inline std::string tool_path() {
#ifdef COTUNE_TOOL
  return COTUNE_TOOL;
#else
  const char* tests_dir = std::getenv("COTUNE_TEST_BINARY_DIR");
  return tests_dir ? (std::filesystem::path(tests_dir).parent_path() / "tools" / "cotune").string()
                   : std::string("tools/cotune");
#endif
}

} // namespace cotune_test
