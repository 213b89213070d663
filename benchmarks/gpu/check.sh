#!/usr/bin/env bash
# The GPU check, run on the device machine after benchmarks/gpu/pack.sh's three pieces were copied to
# /tmp/gpu (see pack.sh for the three calls). About 9 minutes; every stage writes its log under $OUT and the
# end of the output is a short summary:
#
#   1. install the packed wheels into /tmp/site (the device's Python 3.12 has PyTorch, pytest, pytest-xdist,
#      pytest-timeout and hypothesis, none of warp, newton or mujoco; the tests that need Pinocchio skip);
#   2. the test suite on CUDA (Warp's default device there), 12 processes, at most 330 s;
#   3. bench_contact.py with replayed CUDA graphs: issue 3's scenes at 1024 and 4096 worlds (SAP, Featherstone,
#      MuJoCo Warp), the pile and the 66-link snake at 1024 (the snake also with dense_max_dofs=128: the dense
#      tile preconditioner against the tree LDLᵀ one for its 71-dof tree), at most 200 s.
set -uo pipefail
cd "$(dirname "$0")/../.."
OUT=${OUT:-/tmp/gpu_out}
mkdir -p "$OUT" /tmp/gpu/bundle /tmp/site
export PYTHONUNBUFFERED=1
t0=$SECONDS
cat /tmp/gpu/bundle.tar.part* | tar -x -C /tmp/gpu/bundle || { echo "missing pieces under /tmp/gpu"; exit 2; }
(cd /tmp/gpu/bundle && sha256sum -c --quiet SHA256SUMS) || { echo "corrupt bundle"; exit 2; }
python3 -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --upgrade --target /tmp/site \
    /tmp/gpu/bundle/*.whl || exit 2
tar -x -C /tmp/site -f /tmp/gpu/bundle/warp_python.tar
python3 -c "import glob, lzma, os, shutil
for lib in glob.glob('/tmp/gpu/bundle/*.so.xz'):
    with lzma.open(lib) as src, open(os.path.join('/tmp/site/warp/bin', os.path.basename(lib)[:-3]), 'wb') as dst:
        shutil.copyfileobj(src, dst)" || exit 2
export PYTHONPATH=/tmp/site:$PWD
nvidia-smi -L | tee "$OUT/device.txt"
python3 -c "import warp as wp, newton; wp.init(); print('warp', wp.__version__, 'newton', newton.__version__, wp.get_cuda_devices())" \
    | tee -a "$OUT/device.txt" || exit 2
echo "installed in $((SECONDS - t0)) s"

timeout 330 python3 -m pytest -q -p no:cacheprovider -n 12 --timeout 240 -rfE tests > "$OUT/tests.log" 2>&1
echo "tests: exit $? after $((SECONDS - t0)) s"

bench() { timeout "$1" python3 benchmarks/bench_contact.py --device cuda:0 --graph --no-sweep "${@:2}"; }
{
    bench 90 --scenes boxes ant humanoid --worlds 1024 4096 --steps 1600 --out "$OUT/bench_robots.md"
    bench 60 --scenes spheres snake --worlds 1024 --solvers SAP Featherstone --steps 1600 --out "$OUT/bench_pile.md"
    bench 40 --scenes snake --worlds 1024 --solvers SAP --steps 1600 --sap dense_max_dofs=128 --out "$OUT/bench_snake_dense.md"
} > "$OUT/bench.log" 2>&1
echo "benchmarks done after $((SECONDS - t0)) s"

echo "== tests (failures and errors, then the summary) =="
grep -E "^(FAILED|ERROR) " "$OUT/tests.log" | cut -c1-200 | head -40
tail -n 3 "$OUT/tests.log"
echo "== benchmarks (ms per step; the tables are in bench_*.md) =="
grep -E " ms/step| dt " "$OUT/bench.log" | grep -v "^ *$" | head -40
