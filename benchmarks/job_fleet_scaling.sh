#!/usr/bin/env bash
# Keys per second of `cotune tune` on one 64-key host job, 1 process against N processes sharing one
# redis-server on loopback (each with its own local cache), as in issue 13 item 2.
#
#   benchmarks/job_fleet_scaling.sh [path/to/cotune] [N=4] [rep_ms=50]
#
# Prints one line per run and a JSON summary. The kernel is a 64K-element fill (cheap to compile);
# the figure is dominated by the benchmark budget per candidate (2 candidates x rep_ms per key).
set -euo pipefail
tool=${1:-build/bench/tools/cotune}
n=${2:-4}
rep_ms=${3:-50}
work=$(mktemp -d)
trap 'kill $(cat "$work/redis.pid" 2>/dev/null) 2>/dev/null || true; rm -rf "$work"' EXIT
port=$(python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])')
redis-server --port "$port" --bind 127.0.0.1 --save "" --appendonly no --daemonize yes \
  --pidfile "$work/redis.pid" --logfile "$work/redis.log" --dir "$work"
for _ in $(seq 50); do redis-cli -p "$port" ping >/dev/null 2>&1 && break; sleep 0.1; done
python3 - "$work/job.json" "$rep_ms" <<'PY'
import json, sys
job = {"name": "fleet-scaling", "bench": {"warmup_ms": 2, "rep_ms": float(sys.argv[2])},
       "kernels": [{"name": "fill",
                    "code": "extern \"C\" void fill(float* y, int n) { for (int i = 0; i < n; ++i) y[i] = float(i * SCALE); }",
                    "space": {"axes": {"SCALE": [1, 2]}},
                    "arguments": [{"name": "y", "buffer": "float32", "extent": "65536"},
                                  {"name": "n", "scalar": "int32", "value": "n"}],
                    "key": ["n"], "instances": {"n": list(range(65472, 65536))}}]}
json.dump(job, open(sys.argv[1], "w"), indent=1)
PY
export COTUNE_REDIS_URL=redis://127.0.0.1:$port COTUNE_BENCH_SCREEN_REP_MS=0
run() { # $1 = processes
  redis-cli -p "$port" flushall >/dev/null
  rm -rf "$work"/cache*
  # Each process compiles the two candidates into its own cache (or takes them from Redis).
  local start end
  start=$(date +%s.%N)
  for i in $(seq "$1"); do
    COTUNE_CACHE_DIR=$work/cache$i "$tool" tune "$work/job.json" --jsonl >"$work/out$i.jsonl" 2>"$work/err$i.txt" &
  done
  wait
  end=$(date +%s.%N)
  python3 - "$1" "$start" "$end" "$work" <<'PY'
import json, sys
p, start, end, work = int(sys.argv[1]), float(sys.argv[2]), float(sys.argv[3]), sys.argv[4]
measured = 0
for i in range(1, p + 1):
    last = [json.loads(l) for l in open(f"{work}/out{i}.jsonl") if l.strip()][-1]
    assert last["event"] == "job" and last["failed"] == 0, last
    measured += last["measured"]
print(json.dumps({"processes": p, "keys": 64, "measured": measured, "wall_s": round(end - start, 3),
                  "keys_per_s": round(64 / (end - start), 2)}))
PY
}
echo "cotune $("$tool" version | head -1 | cut -d' ' -f2), $(nproc) cores, rep_ms=$rep_ms, $(date -u +%F)"
run 1
run "$n"
