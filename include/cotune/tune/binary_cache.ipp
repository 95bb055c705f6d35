#pragma once
/// \file The body of detail::binary_meta::from_json (compiled once with COTUNE_SEPARATE_COMPILATION,
/// see detail/config.hpp).

#include <optional>
#include <string>
#include <string_view>

#include <simdjson.h>

#include <cotune/tune/binary_cache.hpp>

namespace cotune::detail {

COTUNE_DECL std::optional<binary_meta> binary_meta::from_json(std::string_view text) {
  simdjson::dom::parser parser;
  simdjson::dom::object root;
  std::string_view meta, sha;
  if (parser.parse(text).get(root) != simdjson::SUCCESS || root["meta"].get(meta) != simdjson::SUCCESS ||
      root["image_sha256"].get(sha) != simdjson::SUCCESS)
    return std::nullopt;
  return binary_meta{std::string(meta), std::string(sha)};
}

} // namespace cotune::detail
