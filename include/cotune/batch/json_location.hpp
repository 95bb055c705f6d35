#pragma once
/// \file `cotune::batch::json_path` and `locate`: where a value is in a JSON text (line and column), so
/// that errors about a job file name the line as well as the field (simdjson's DOM keeps no positions).

#include <cotune/detail/config.hpp> // first: a pre-C++20 compile stops at its one message

#include <cstddef>
#include <string>
#include <string_view>
#include <variant>
#include <vector>

namespace cotune::batch {

/// A path into a JSON document: object keys and array indices (`kernels[0].arguments[2].extent`).
class json_path {
public:
  using segment = std::variant<std::string, std::size_t>;

  /// This path, then object key `key`.
  [[nodiscard]] COTUNE_DECL json_path operator/(std::string_view key) const;
  /// This path, then array index `index`.
  [[nodiscard]] COTUNE_DECL json_path operator[](std::size_t index) const;
  [[nodiscard]] const std::vector<segment>& segments() const noexcept { return segments_; }
  /// `kernels[0].arguments[2].extent`; the document itself is `(top level)`.
  [[nodiscard]] COTUNE_DECL std::string text() const;

private:
  std::vector<segment> segments_;
};

/// A 1-based line and column.
struct text_location {
  std::size_t line = 1, column = 1;
};

/// The position of the value at `path` in `text` (of the deepest part of the path that exists, when
/// the rest does not: a missing field is reported at the object that lacks it).
[[nodiscard]] COTUNE_DECL text_location locate(std::string_view text, const json_path& path);

/// `locate` for a reader that locates many values of one text: each call costs the scan from where the
/// last one ended when `path` is the next element of the array the last call located an element of
/// (a reader's loop over a list), and line and column are found in an index of the text's lines. So
/// a job file that lists a million instances is read in linear time, not in time quadratic in its size.
class json_locator {
public:
  COTUNE_DECL explicit json_locator(std::string_view text);
  [[nodiscard]] COTUNE_DECL text_location operator()(const json_path& path);

private:
  std::string_view text_;
  std::vector<std::size_t> line_starts_;
  json_path last_;              ///< the last path located, when found whole
  std::size_t last_offset_ = 0; ///< where its value starts
  bool have_last_ = false;
};

} // namespace cotune::batch

#if COTUNE_HEADER_ONLY
#include <cotune/batch/json_location.ipp>
#endif
