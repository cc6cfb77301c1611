#!/usr/bin/env bash
# On this (CPU) machine: what a GPU run of benchmarks/gpu_run.sh brings along, within the device tool's carry
# limit (64 MiB per call).
#   .whl/                 the wheels the GPU machine lacks (../shared/tools/gpu-wheels.sh: mujoco, mujoco-mjx,
#                         gymnasium, tyro, ...) and part A of MuJoCo Warp
#   .whl2/                part B of MuJoCo Warp
#   .gpu/dmc/             dm_control's suite humanoid.xml and common/ (dm_control is not installed there)
# MuJoCo Warp needs warp-lang, whose wheel is 149 MB (warp.so alone is 298 MB: NVRTC and the CUDA kernels,
# statically linked), so it cannot travel in one call: its `warp` package, without warp-clang.so (Warp's CPU
# code generator, unused on a GPU) and its examples, plus mujoco_warp, is packed as one tar.xz and split in two.
# Phase `a` of gpu_run.sh carries .whl and keeps part A on the machine; phase `b`, called while the machine is
# still warm (it is released 30 s after a call), carries .whl2 and unpacks MuJoCo Warp.
#
# usage: bash benchmarks/gpu_wheels.sh          (KEEP_CLANG=1 keeps warp-clang.so: a CPU trial of phase b)
set -euo pipefail
root=$(git rev-parse --show-toplevel)
cd "$root"
limit=$((64 * 1024 * 1024))
warp_lang=${WARP_LANG:-warp-lang==1.19.0}
mujoco_warp=${MUJOCO_WARP:-mujoco-warp==4.0.0}
for d in /.whl2/ /.gpu-keep/ /.gpu/; do grep -qx "$d" .git/info/exclude 2>/dev/null || echo "$d" >> .git/info/exclude; done
rm -rf .whl .whl2 && mkdir -p .whl2
bash ../shared/tools/gpu-wheels.sh >/dev/null
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
python3 -m pip download -q --no-deps --only-binary=:all: --python-version 3.12 --implementation cp \
  --platform manylinux_2_28_x86_64 --platform any -d "$tmp/dl" "$warp_lang" "$mujoco_warp"
mkdir -p "$tmp/site"
for w in "$tmp"/dl/*.whl; do python3 -m zipfile -e "$w" "$tmp/site"; done
rm -rf "$tmp"/site/warp/examples
[ "${KEEP_CLANG:-0}" = 1 ] || rm -f "$tmp"/site/warp/bin/warp-clang.so
tar -C "$tmp/site" -cf - . | xz -T0 -6 > "$tmp/mjwarp.tar.xz"
small=$(du -cb .whl/*.whl | tail -1 | cut -f1)
total=$(stat -c %s "$tmp/mjwarp.tar.xz")
first=$(((limit - small) - 1024 * 1024))  # part A fills call a's carry, less a MiB of margin
if ((total - first > limit - 1024 * 1024)); then
  echo "MuJoCo Warp packed is $((total >> 20)) MiB: more than two calls' carry; see this script's header" >&2
  exit 1
fi
head -c "$first" "$tmp/mjwarp.tar.xz" > .whl/mjwarp.tar.xz.a
tail -c +"$((first + 1))" "$tmp/mjwarp.tar.xz" > .whl2/mjwarp.tar.xz.b
sha256sum < "$tmp/mjwarp.tar.xz" | cut -d' ' -f1 > .whl2/mjwarp.sha256
cat .whl/mjwarp.tar.xz.a .whl2/mjwarp.tar.xz.b | sha256sum -c <(echo "$(cat .whl2/mjwarp.sha256)  -") >/dev/null
# dm_control's suite humanoid (dm_control is not installed there): .gpu/dmc, carried with .whl
py=${PYTHON:-$([ -x .venv/bin/python ] && echo .venv/bin/python || echo python3)}
suite=$("$py" -c "import dm_control, os; print(os.path.join(os.path.dirname(dm_control.__file__), 'suite'))")
rm -rf .gpu/dmc && mkdir -p .gpu/dmc && cp -r "$suite/humanoid.xml" "$suite/common" .gpu/dmc/
du -sh .whl .whl2 .gpu
