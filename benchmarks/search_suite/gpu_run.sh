#!/bin/bash
# The search suite's GPU-machine run (issue 35, item 3), from the repository root, after
#     .gpu-kit/build bench_cuda_search_suite bench_search_suite && . .gpu-kit/env
# 1. measures the new H200 space (histogram, 960 configs; about 40 s, at most 90 s) into
#    $OUT/histogram/suite_h200_spaces.json and converts it into $OUT/data/h200-histogram.json;
# 2. replays the whole suite, the new space included, on this machine's cores: the spaces under 10,000
#    configs with 100 seeds (at most 80 s), the three larger ones with 10 (at most 60 s). Figures in
#    $OUT/suite-small and $OUT/suite-large (results.json after each space, one SVG per space), logs beside.
# Every step is capped by `timeout`: at most 230 s in all.
set -u
out=${OUT:?set OUT to the folder whose files come back}
bin=${BUILD:-build/gpu}/benchmarks
commit=$(git rev-parse HEAD 2>/dev/null || echo "${COMMIT:-unknown}")
mkdir -p "$out/histogram" "$out/data"
COTUNE_CACHE_DIR=$(mktemp -d) timeout 90 "$bin/bench_cuda_search_suite" "$out/histogram" > "$out/histogram.log" 2>&1
echo "bench_cuda_search_suite: exit $?" | tee -a "$out/histogram.log"
tail -3 "$out/histogram.log"
data=$(mktemp -d)
cp benchmarks/search_suite/data/*.json "$data/"
if [[ -f $out/histogram/suite_h200_spaces.json ]]; then
  python3 benchmarks/search_suite/convert.py --table "$out/histogram/suite_h200_spaces.json" --table-commit "$commit" \
    --out "$out/data" && cp "$out"/data/*.json "$data/"
fi
small=h200-gemm,h200-stencil,h200-reduction,h200-histogram,pnpoly-rtx3090,convolution-a100,convolution-w6600,convolution-rtx3090
timeout 80 "$bin/bench_search_suite" --data "$data" --seeds 100 --spaces "$small" --out "$out/suite-small" \
  > "$out/suite-small.log" 2>&1
echo "suite (small, 100 seeds): exit $?" | tee -a "$out/suite-small.log"
timeout 60 "$bin/bench_search_suite" --data "$data" --seeds 10 --spaces dedispersion-a100,dedispersion-mi250x,xgemm-rtx3090 \
  --out "$out/suite-large" > "$out/suite-large.log" 2>&1
echo "suite (large, 10 seeds): exit $?" | tee -a "$out/suite-large.log"
