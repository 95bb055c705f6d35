#pragma once
/// \file `cotune::batch::import_triton`: Triton's autotuning cache files as tuning-database entries, the
/// migration path for users coming from Triton.
///
/// Triton (3.4 and later, `cache_results=True` or TRITON_CACHE_AUTOTUNING) writes one file per tuning,
/// `{kernel}.autotune.json` (spec §3.7):
///
///     {"key": [4096, "torch.float16"], "configs_timings": [[{"kwargs": {"BLOCK": 64}, "num_warps": 4,
///      "num_ctas": 1, "num_stages": 3, "maxnreg": null, "pre_hook": null, "ir_override": null},
///      [t50, t20, t80]], ...]}
///
/// with a failed config's times written as the non-standard `Infinity`. Its "key" holds the values of
/// the `key=` arguments in the order `key=` lists them, then `str(dtype)` of every tensor argument in
/// argument order. A cotune key text names arguments in argument order ("a: float16, n=4096"), so the
/// import needs the kernel's signature: its arguments in order (which are tensors) and its key
/// arguments. The winner is the config with the smallest times (compared as Triton does, median first);
/// each config becomes a cotune config with the same parameters and launch options. A tuner adopts an
/// imported winner only where its own candidate list holds an equal config (same parameter names and
/// values, same num_warps/num_stages/num_ctas/maxnreg): otherwise it tunes, as for any database entry.
///
/// A file is held to what Triton writes and to batch/input_limits.hpp before it is used: the kernel name
/// is a C identifier (it reaches file names), num_warps a power of two in [1, 32], num_stages,
/// num_ctas and maxnreg in [1, 2^20], at most `job.max_candidates` configs of 1 to 3 times each, and
/// the file within `job.max_file_bytes`.
///
///     triton_signature sig{.kernel = "matmul", .args = {{"a", true}, {"b", true}, {"c", true},
///                          {"M"}, {"N"}, {"K"}}, .key = {"M", "N", "K"}, .device = "NVIDIA H200"};
///     database_entry e = import_triton(file_text, sig, "matmul.autotune.json");

#include <cotune/detail/config.hpp> // first: a pre-C++20 compile stops at its one message
#include <filesystem>
#include <string>
#include <string_view>
#include <vector>

#include <cotune/detail/config.hpp>
#include <cotune/batch/tuning_database.hpp>

namespace cotune::batch {

/// What the import needs to know of the Triton kernel, and where its file was tuned.
struct triton_signature {
  struct argument {
    std::string name;
    bool tensor = false; ///< a torch tensor: its dtype is part of Triton's key, and of cotune's key text
  };
  std::string kernel;              ///< the cotune kernel name (the file's name without .autotune.json, by default)
  std::vector<argument> args;      ///< every argument of the kernel, in order
  std::vector<std::string> key;    ///< the `key=` list of Triton's autotune, in its order (no tensors)
  std::string device;              ///< the device it was tuned on, as cotune names it ("NVIDIA H200")
  std::string date{};              ///< when, if known (UTC, ISO 8601); else the import's date
};

/// The database entry of one Triton autotune file: its winner, and every config with its times. Throws
/// database_error naming `origin`, what is wrong and the fix (not JSON, not a Triton autotune file, a
/// key that does not fit `sig`, a kernel name that is not a C identifier, a config cotune cannot
/// express or Triton could not have run, a file over the limits, no config that ran).
[[nodiscard]] COTUNE_DECL database_entry import_triton(std::string_view text, const triton_signature& sig,
                                                       std::string_view origin);

/// `import_triton` of the file at `file`, named by its path in messages. Throws database_error when the
/// file cannot be read, or as `import_triton` does.
[[nodiscard]] COTUNE_DECL database_entry import_triton_file(const std::filesystem::path& file,
                                                            const triton_signature& sig);

/// The cotune kernel name of a Triton autotune file: its file name without ".autotune.json".
[[nodiscard]] COTUNE_DECL std::string triton_kernel_name(std::string_view file_name);

} // namespace cotune::batch

#if COTUNE_HEADER_ONLY
#include <cotune/batch/triton_import.ipp>
#endif
