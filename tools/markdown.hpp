#pragma once
// Markdown table helpers shared by the tool's `cotune knobs --markdown` and the knob reference generator.

#include <string>
#include <string_view>

namespace cotune_tools {

/// An empty value as `""`, so that it cannot be mistaken for a missing column.
inline std::string shown_text(const std::string& s) { return s.empty() ? std::string("\"\"") : s; }

/// A Markdown table cell: '|' escaped, line breaks flattened.
inline std::string md_cell(std::string_view s) {
  std::string out;
  for (char c : s) {
    if (c == '|') out += "\\|";
    else if (c == '\n') out += ' ';
    else out += c;
  }
  return out;
}

} // namespace cotune_tools
