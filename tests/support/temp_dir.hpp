#pragma once
/// \file Test helpers: a private temporary directory, scoped environment variables, and a private cache.
///
/// Header-only; include it with a relative path ("../support/temp_dir.hpp").

#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <optional>
#include <stdexcept>
#include <string>
#include <system_error>

#include <cotune/knobs/knobs.hpp>

namespace cotune_test {

/// A fresh directory under $TMPDIR (or /tmp), removed with everything in it on destruction.
class temp_dir {
public:
  explicit temp_dir(const std::string& prefix = "cotune-test") {
    std::string tmpl = (std::filesystem::temp_directory_path() / (prefix + "-XXXXXX")).string();
    if (!::mkdtemp(tmpl.data()))
      throw std::runtime_error("temp_dir: mkdtemp('" + tmpl + "') failed: " + std::strerror(errno));
    path_ = tmpl;
  }
  temp_dir(const temp_dir&) = delete;
  temp_dir& operator=(const temp_dir&) = delete;
  ~temp_dir() {
    std::error_code ec;
    // Tests make read-only directories on purpose; give write access back so that removal succeeds.
    std::filesystem::permissions(path_, std::filesystem::perms::owner_all, std::filesystem::perm_options::add, ec);
    std::filesystem::remove_all(path_, ec);
  }

  [[nodiscard]] const std::filesystem::path& path() const noexcept { return path_; }
  [[nodiscard]] std::filesystem::path operator/(const std::string& name) const { return path_ / name; }
  [[nodiscard]] std::string string() const { return path_.string(); }

private:
  std::filesystem::path path_;
};

/// Sets (or, with nullopt, unsets) an environment variable for the lifetime of the object, then
/// restores the previous value or absence.
class scoped_env {
public:
  scoped_env(std::string name, const std::optional<std::string>& value) : name_(std::move(name)) {
    if (const char* old = std::getenv(name_.c_str())) previous_ = old;
    set(value);
  }
  scoped_env(const scoped_env&) = delete;
  scoped_env& operator=(const scoped_env&) = delete;
  ~scoped_env() { set(previous_); }

  /// Changes the value again (the original is still what is restored).
  void set(const std::optional<std::string>& value) const {
    if (value) ::setenv(name_.c_str(), value->c_str(), 1);
    else ::unsetenv(name_.c_str());
  }

private:
  std::string name_;
  std::optional<std::string> previous_;
};

/// The current value of an environment variable, or nullopt.
[[nodiscard]] inline std::optional<std::string> getenv_opt(const char* name) {
  const char* v = std::getenv(name);
  return v ? std::optional<std::string>(v) : std::nullopt;
}

/// A private cache for one test: the cache, dump and override directories point into a temporary
/// directory (through scoped knob overrides), removed at the end.
class private_cache {
public:
  private_cache()
      : root_("cotune-cache"), dir_(cotune::knobs().cache.dir.scoped((root_.path() / "cache").string())),
        dump_(cotune::knobs().cache.dump_dir.scoped((root_.path() / "dump").string())),
        override_(cotune::knobs().cache.override_dir.scoped((root_.path() / "override").string())) {}

  [[nodiscard]] const std::filesystem::path& root() const noexcept { return root_.path(); }
  [[nodiscard]] std::filesystem::path cache_dir() const { return root_.path() / "cache"; }
  [[nodiscard]] std::filesystem::path dump_dir() const { return root_.path() / "dump"; }
  [[nodiscard]] std::filesystem::path override_dir() const { return root_.path() / "override"; }

private:
  temp_dir root_;
  cotune::knob<std::string>::scope dir_;
  cotune::knob<std::string>::scope dump_;
  cotune::knob<std::string>::scope override_;
};

} // namespace cotune_test
