"""Makes a real Triton autotune cache file, for `cotune db from-triton` (batch/triton_import.hpp).

Autotunes a vector add (two float16 tensors in, one float32 tensor out) with `cache_results=True`
(6 configs, key=["n"]), checks its output, then copies every `*.autotune.json` Triton wrote under
TRITON_CACHE_DIR to the output directory and prints it.

    TRITON_CACHE_DIR=/tmp/tc python3 benchmarks/compare/triton_cache_file.py OUT_DIR [n]
"""
import glob
import os
import shutil
import sys

import torch
import triton
import triton.language as tl

CONFIGS = [triton.Config({"BLOCK": block}, num_warps=warps) for block in (256, 1024, 4096) for warps in (2, 4)]


@triton.autotune(configs=CONFIGS, key=["n"], cache_results=True)
@triton.jit
def cotune_import_add(x_ptr, y_ptr, out_ptr, n, BLOCK: tl.constexpr):
    offsets = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    inside = offsets < n
    x = tl.load(x_ptr + offsets, mask=inside)
    y = tl.load(y_ptr + offsets, mask=inside)
    tl.store(out_ptr + offsets, x + y, mask=inside)


def main():
    out_dir = sys.argv[1]
    n = int(sys.argv[2]) if len(sys.argv) > 2 else 1 << 20
    x = torch.randn(n, device="cuda", dtype=torch.float16)
    y = torch.randn(n, device="cuda", dtype=torch.float16)
    out = torch.empty(n, device="cuda", dtype=torch.float32)
    grid = lambda meta: (triton.cdiv(n, meta["BLOCK"]),)
    cotune_import_add[grid](x, y, out, n)
    torch.cuda.synchronize()
    assert torch.allclose(out, (x.float() + y.float()), atol=1e-2)
    print("best config:", cotune_import_add.best_config)
    print("device name:", torch.cuda.get_device_name(0))
    os.makedirs(out_dir, exist_ok=True)
    cache = os.environ.get("TRITON_CACHE_DIR", os.path.expanduser("~/.triton/cache"))
    files = glob.glob(os.path.join(cache, "**", "*.autotune.json"), recursive=True)
    for f in files:
        shutil.copy(f, out_dir)
        print("copied", f)
        print(open(f).read())
    if not files:
        print("no .autotune.json under", cache)
        sys.exit(1)


if __name__ == "__main__":
    main()
