#!/bin/bash
# Transfer between tuned keys on the H200 (issue 37, item 3), from the repository root, after
#     .gpu-kit/build bench_cuda_search_spaces bench_search_suite && . .gpu-kit/env
# 1. measures the GEMM space (example 04's fp16 tensor-core GEMM, 736 configs) whole at 5 sizes
#    (M = N = K = 512, 1024, 2048, 3072, 4096; SIZES=a,b,... for others) into $OUT/gemm_sizes.json
#    (about 10 to 30 s a size, the NVRTC compiles of the first size included; capped at 420 s);
# 2. converts it into the search suite's multi-size data files, benchmarks/search_suite/data/
#    h200-gemm-NxNxN.json (DATA=dir to write them elsewhere), to be committed;
# 3. replays the transfer (bench_search_suite --transfer: each size the new key, the others tuned,
#    bayes-local and random with a budget of the whole space, 100 seeds; a few seconds) into
#    $OUT/transfer.json and prints its table.
set -u
out=${OUT:-build/gpu/search_sizes}
bin=${BUILD:-build/gpu}/benchmarks
data=${DATA:-benchmarks/search_suite/data}
commit=$(git rev-parse HEAD 2>/dev/null || echo "${COMMIT:-unknown}")
mkdir -p "$out"
rm -f "$out/gemm_sizes.json"
COTUNE_CACHE_DIR=$(mktemp -d) timeout 420 "$bin/bench_cuda_search_spaces" --sizes "$out/gemm_sizes.json" \
  ${SIZES:+--gemm-sizes "$SIZES"} 2>&1 | tee "$out/gemm_sizes.log"
[[ -s $out/gemm_sizes.json ]] || { echo "sizes_run: no table measured (no GPU, or it ran out of time)"; exit 1; }
python3 benchmarks/search_suite/convert.py --table "$out/gemm_sizes.json" --table-commit "$commit" \
  --table-tool "bench_cuda_search_spaces --sizes" --out "$data" || exit 1
timeout 120 "$bin/bench_search_suite" --transfer --data "$data" --seeds 100 --out "$out" 2>&1 | tee "$out/transfer.log"
