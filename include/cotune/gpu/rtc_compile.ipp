#pragma once
/// \file The body of rtc_meta::from_json (compiled once with COTUNE_SEPARATE_COMPILATION, see
/// detail/config.hpp).

#include <optional>
#include <string>
#include <string_view>

#include <simdjson.h>

#include <cotune/gpu/rtc_compile.hpp>

namespace cotune::gpu {

COTUNE_DECL std::optional<rtc_meta> rtc_meta::from_json(std::string_view text) {
  simdjson::dom::parser parser;
  simdjson::dom::object root;
  if (parser.parse(text).get(root) != simdjson::SUCCESS) return std::nullopt;
  std::string_view lowered, arch, log;
  bool is_ptx = false;
  if (root["lowered_name"].get(lowered) != simdjson::SUCCESS || root["arch"].get(arch) != simdjson::SUCCESS ||
      root["log"].get(log) != simdjson::SUCCESS)
    return std::nullopt;
  if (auto p = root["is_ptx"]; p.error() == simdjson::SUCCESS && p.get(is_ptx) != simdjson::SUCCESS)
    return std::nullopt;
  return rtc_meta{std::string(lowered), std::string(arch), std::string(log), is_ptx};
}

} // namespace cotune::gpu
