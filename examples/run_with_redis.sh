#!/bin/sh
# Runs a program with COTUNE_REDIS_URL set to a private redis-server on 127.0.0.1 at a free port (no
# persistence, killed at the end), as example 08's test does: run_with_redis.sh PROGRAM [ARGS...]
set -u
server=$(command -v redis-server) || { echo "run_with_redis.sh: redis-server not found (Debian: apt-get install redis-server)" >&2; exit 1; }
dir=$(mktemp -d /tmp/cotune-redis-XXXXXX)
pid=
cleanup() {
  [ -n "$pid" ] && kill "$pid" 2>/dev/null && wait "$pid" 2>/dev/null
  rm -rf "$dir"
}
trap cleanup EXIT
trap 'exit 130' INT TERM
for attempt in 1 2 3 4 5; do
  port=$(( 20000 + $(od -An -N2 -tu2 /dev/urandom | tr -d ' ') % 20000 ))
  : > "$dir/redis.log"
  "$server" --bind 127.0.0.1 --port "$port" --save "" --appendonly no --dir "$dir" --logfile "$dir/redis.log" &
  pid=$!
  # Ready once it says so while still alive; a port someone else holds makes it exit: try another.
  tries=0
  while [ $tries -lt 100 ]; do
    if ! kill -0 "$pid" 2>/dev/null; then break; fi
    if grep -q 'Ready to accept connections' "$dir/redis.log"; then
      COTUNE_REDIS_URL="redis://127.0.0.1:$port" "$@"
      exit $?
    fi
    sleep 0.1
    tries=$((tries + 1))
  done
  kill "$pid" 2>/dev/null; wait "$pid" 2>/dev/null; pid=
done
echo "run_with_redis.sh: redis-server did not start; its log:" >&2
cat "$dir/redis.log" >&2
exit 1
