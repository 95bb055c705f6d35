#pragma once
/// \file `cotune::entry_fault`: why a framed cache entry (local or remote) was not accepted.

#include <cotune/detail/config.hpp> // first: a pre-C++20 compile stops at its one message

#include <string_view>

namespace cotune {

/// Why an entry was refused; every fault is a miss for readers.
enum class entry_fault {
  none,           ///< accepted
  malformed,      ///< too short, or not framed at all (no magic)
  bad_version,    ///< another frame format version
  truncated,      ///< the recorded length is not the payload's length
  bad_checksum,   ///< payload, key or file name differ from what was framed
  unsigned_entry, ///< the reader holds a secret and the entry carries no MAC
  bad_signature,  ///< signed with another secret
};

/// Text for a fault, for messages and reports.
[[nodiscard]] constexpr std::string_view to_string(entry_fault f) noexcept {
  switch (f) {
  case entry_fault::none: return "none";
  case entry_fault::malformed: return "malformed";
  case entry_fault::bad_version: return "bad version";
  case entry_fault::truncated: return "truncated";
  case entry_fault::bad_checksum: return "bad checksum";
  case entry_fault::unsigned_entry: return "unsigned";
  case entry_fault::bad_signature: return "bad signature";
  }
  return "unknown";
}

} // namespace cotune
