#pragma once
/// \file The Redis module's umbrella header: knobs, the hiredis backend (and `cotune::redis::remote_cache`,
/// the remote cache manager over it), and tuning leases. Link `cotune::redis`; `COTUNE_HAS_REDIS` is
/// defined when it is available.

#include <cotune/redis/job_ledger.hpp>
#include <cotune/redis/redis_backend.hpp>
#include <cotune/redis/redis_knobs.hpp>
#include <cotune/redis/redis_lease.hpp>
#include <cotune/redis/tuning_coordination.hpp>
