#pragma once
/// \file The bodies of core/errors.hpp's non-template functions (compiled once with
/// COTUNE_SEPARATE_COMPILATION, by impl/src.hpp).

#include <cotune/detail/config.hpp>
#include <cotune/core/errors.hpp>

namespace cotune {

COTUNE_DECL std::exception_ptr copy_error(const std::exception_ptr& e) {
  if (!e) return e;
  try {
    std::rethrow_exception(e);
  } catch (const compiler_crashed& x) {
    return std::make_exception_ptr(compiler_crashed(x.what(), x.log()));
  } catch (const compile_error& x) {
    return std::make_exception_ptr(compile_error(x.what(), x.log()));
  } catch (const out_of_resources& x) {
    return std::make_exception_ptr(out_of_resources(x.resource(), x.required(), x.limit()));
  } catch (const knob_error& x) {
    return std::make_exception_ptr(knob_error(x.what()));
  } catch (const cache_error& x) {
    return std::make_exception_ptr(cache_error(std::string(x.what())));
  } catch (const launch_error& x) {
    return std::make_exception_ptr(launch_error(x.what()));
  } catch (const timeout_error& x) {
    return std::make_exception_ptr(timeout_error(x.what()));
  } catch (const candidate_crashed& x) {
    return std::make_exception_ptr(candidate_crashed(x.what()));
  } catch (const candidate_hung& x) {
    return std::make_exception_ptr(candidate_hung(x.what()));
  } catch (const autotuner_error& x) {
    return std::make_exception_ptr(autotuner_error(x.what()));
  } catch (...) {
  }
  return e;
}

} // namespace cotune
