#pragma once
/// \file The bodies of batch/job_runner.hpp's non-template functions (compiled once with
/// COTUNE_SEPARATE_COMPILATION, see detail/config.hpp).

#include <cotune/detail/hashing.hpp>
#include <cotune/batch/job_runner.hpp>

namespace cotune::batch {

COTUNE_DECL std::string claim_id(const std::string& fingerprint, const kernel_source& k, const std::string& key) {
  cotune::detail::sha256_hasher h;
  h.field("cotune-job-claim").field(fingerprint).field(k.digest()).field(key);
  return cotune::detail::to_hex(h.digest());
}

COTUNE_DECL std::map<std::string, const instance*, std::less<>> instances_by_key(const kernel_job& kj) {
  std::map<std::string, const instance*, std::less<>> out;
  for (const auto& inst : kj.instances) out.emplace(key_text(kj.arguments_for(inst)), &inst);
  return out;
}

} // namespace cotune::batch
