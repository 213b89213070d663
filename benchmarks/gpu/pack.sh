#!/usr/bin/env bash
# Packs what a GPU check needs (warp-lang, newton, mujoco, mujoco-warp for the device's Python 3.12) into
# three pieces of at most 60 MB each under .gpu/1, .gpu/2 and .gpu/3 of the repository root (ignored by git).
#
# Why pieces: the device machine reaches no package registry, and one call carries at most 64 MiB with the
# working tree, while warp-lang's wheel alone is 149 MB (its warp.so is 299 MB; xz brings it to 78 MB).
# Run here (a few minutes: xz -9), then on the device three calls in a row, each within the machine's idle
# release of the one before (see benchmarks/gpu/check.sh):
#
#   run(carry=[".gpu/1"], command="mkdir -p /tmp/gpu && cp .gpu/1/* /tmp/gpu/ && ls -la /tmp/gpu")
#   run(carry=[".gpu/2"], command="cp .gpu/2/* /tmp/gpu/ && ls -la /tmp/gpu")
#   run(carry=[".gpu/3"], command="cp .gpu/3/* /tmp/gpu/ && bash benchmarks/gpu/check.sh", timeout_s=600)
set -euo pipefail
cd "$(dirname "$0")/../.."
root=$PWD
grep -qx '/.gpu/' .git/info/exclude 2>/dev/null || { mkdir -p .git/info; echo '/.gpu/' >> .git/info/exclude; }
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
python3 -m pip download -q --no-deps --only-binary=:all: --python-version 3.12 --implementation cp \
    --platform manylinux_2_28_x86_64 --platform manylinux_2_27_x86_64 --platform manylinux_2_17_x86_64 \
    --platform manylinux2014_x86_64 -d "$work/wheels" \
    warp-lang==1.19.0 newton==1.8.0 mujoco==3.17.0 mujoco-warp==3.17.0  # the versions pyproject.toml admits
# warp-lang: its Python files and dist-info in one tar, each shared library xz-compressed on its own.
mkdir -p "$work/bundle" "$work/warp"
(cd "$work/warp" && python3 -m zipfile -e "$work"/wheels/warp_lang-*.whl . && rm -rf warp/examples)
for lib in "$work"/warp/warp/bin/*.so; do
    xz -9 -T0 -c "$lib" > "$work/bundle/$(basename "$lib").xz"
    rm "$lib"
done
tar -C "$work/warp" -cf "$work/bundle/warp_python.tar" .
mv "$work"/wheels/newton-*.whl "$work"/wheels/mujoco-*.whl "$work"/wheels/mujoco_warp-*.whl "$work/bundle/"
(cd "$work/bundle" && sha256sum -- * > SHA256SUMS)
tar -C "$work/bundle" -cf "$work/bundle.tar" .
rm -rf .gpu && mkdir -p .gpu/1 .gpu/2 .gpu/3
split -n 3 -d -a 1 "$work/bundle.tar" "$work/bundle.tar.part"
for k in 0 1 2; do mv "$work/bundle.tar.part$k" ".gpu/$((k + 1))/"; done
ls -la .gpu/*
