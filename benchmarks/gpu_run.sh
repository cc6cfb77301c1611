#!/usr/bin/env bash
# Every GPU measurement of the physics and training tables (issue #52), most important first, in two device
# calls on one warm machine. Prepare on the CPU with `bash benchmarks/gpu_wheels.sh`, then (../shared/tools/GPU.md):
#   call 1: carry [".whl", ".gpu"]   command: bash benchmarks/gpu_run.sh a
#   call 2: carry [".whl2"]          command: bash benchmarks/gpu_run.sh b    (at once: the machine is released
#                                                                            30 s after a call)
# Phase a installs .whl into .site and keeps MuJoCo Warp's part A in .gpu-keep/ (both ignored by git, so they stay
# on the warm machine); phase b joins part B to it and unpacks MuJoCo Warp into .site.
#
# a: physics at BATCH (8,192) for the five models, hurtle (default, then a contact cap) and MJX; PPO ant to 6,000;
#    the humanoid stage profile; BATCH2 (32,768); PPO humanoid to 5,000.
# b: MuJoCo Warp alone (hurtle's rows are a's, same machine) at BATCH and BATCH2, with its benchmark suite's
#    humanoid sizes (nconmax 24, njmax 64) for the humanoids and its defaults elsewhere.
# Every step runs under what is left of BUDGET seconds (default 420 for a, 300 for b: a session's 900 s of device
# time less the machine's start) and writes as it goes:
# $OUT/log.txt, $OUT/results.md (physics), $OUT/training.md; a step cut short loses only itself.
# A CPU trial (small batches; the venv's packages, MuJoCo Warp from the packed parts: KEEP_CLANG=1 gpu_wheels.sh):
#   CPU=1 PYTHON=.venv/bin/python BATCH=16 BATCH2=32 NSTEPS=10 TRAIN_S=60 bash benchmarks/gpu_run.sh a (then b)
set -u
phase=${1:?usage: gpu_run.sh a|b}
out=${OUT:-/tmp/gpu-run}
mkdir -p "$out"
log=$out/log.txt
end=$((SECONDS + ${BUDGET:-$([ "$phase" = a ] && echo 420 || echo 300)}))
batch=${BATCH:-8192}
batch2=${BATCH2:-32768}
export DM_CONTROL_SUITE=${DM_CONTROL_SUITE:-$PWD/.gpu/dmc} PYTHONUNBUFFERED=1 PYTHONPATH=$PWD/.site:$PWD
py=${PYTHON:-python3}
models=gym:humanoid,gym:ant,gym:half_cheetah,gym:walker2d,dmc:humanoid

step() {  # step NAME SECONDS COMMAND...: COMMAND under min(SECONDS, what is left), logged; skipped when < 20 s left
  local name=$1 want=$2 left=$((end - SECONDS))
  shift 2
  local t=$((left < want ? left : want))
  if ((t < 20)); then
    echo "=== SKIPPED $name: ${left} s left" | tee -a "$log"
    return
  fi
  echo "=== $name (at most ${t} s; ${left} s left) $(date +%T)" | tee -a "$log"
  timeout -k 5 "$t" "$@" 2>&1 | tee -a "$log"
  echo "=== $name: exit ${PIPESTATUS[0]}, $((end - SECONDS)) s left" | tee -a "$log"
}
physics() {  # physics MODELS ENGINES BATCH [physics.py options]: one call per model, so each model's table lands
  local specs=$1 engines=$2 b=$3 spec
  shift 3
  for spec in ${specs//,/ }; do
    step "physics $spec $engines batch $b $*" 300 "$py" benchmarks/physics.py --models "$spec" --engines "$engines" \
      --batch "$b" --nsteps "${NSTEPS:-100}" --repeats 3 --timeout "${TIMEOUT:-150}" --out "$out/results.md" "$@"
  done
}
train() {  # train ENV THRESHOLD SECONDS: stopped at the first iteration past SECONDS (killed 60 s later)
  step "ppo $1 to $2" "$(($3 + 60))" "$py" benchmarks/training.py --env "$1:$2" --stop --max-seconds "$3" \
    --out "$out/training.md" ${TRAIN_SET:+--set $TRAIN_SET}
}

if [ "$phase" = a ]; then
  mkdir -p .site .gpu-keep
  if [ "${CPU:-0}" = 1 ]; then  # the trial: this machine's environment (the wheels are for the GPU's Python 3.12)
    :
  else
    python3 -m pip install -q --no-index --no-deps --no-compile --target .site .whl/*.whl || exit 1
  fi
  cp .whl/mjwarp.tar.xz.a .gpu-keep/ 2>/dev/null || echo "no MuJoCo Warp part A in .whl (phase b will fail)" | tee -a "$log"
  [ "${CPU:-0}" = 1 ] || nvidia-smi -L | tee -a "$log"
  "$py" -c "import jax, mujoco; print('jax', jax.__version__, 'mujoco', mujoco.__version__, jax.devices())" | tee -a "$log"
  physics gym:humanoid hurtle,mjx "$batch"
  train ant 6000 "${TRAIN_S:-150}"
  physics gym:ant,gym:half_cheetah,gym:walker2d,dmc:humanoid hurtle,mjx "$batch"
  physics "$models" hurtle "$batch" --nconmax 16
  step "stage profile humanoid" 120 "$py" benchmarks/stage_profile.py --models gym:humanoid --batch "$batch"
  physics gym:humanoid,gym:ant hurtle,mjx "$batch2"
  train humanoid 5000 "${TRAIN_S:-150}"
  physics gym:half_cheetah,gym:walker2d,dmc:humanoid hurtle,mjx "$batch2"
elif [ "$phase" = b ]; then
  if [ -e .whl2/mjwarp.tar.xz.b ]; then
    cat .gpu-keep/mjwarp.tar.xz.a .whl2/mjwarp.tar.xz.b > .gpu-keep/mjwarp.tar.xz || exit 1
    echo "$(cat .whl2/mjwarp.sha256)  .gpu-keep/mjwarp.tar.xz" | sha256sum -c - || exit 1
    xz -d -T0 < .gpu-keep/mjwarp.tar.xz | tar -x -C .site || exit 1
  fi
  "$py" -c "import warp, mujoco_warp; print('warp', warp.__version__, 'from', warp.__file__)" | tee -a "$log" || exit 1
  humanoids=(--warp-nconmax 24 --warp-njmax 64)  # MuJoCo Warp's own humanoid benchmark (8,192 worlds)
  physics gym:humanoid warp "$batch" "${humanoids[@]}"
  physics gym:ant,gym:half_cheetah,gym:walker2d warp "$batch"
  physics dmc:humanoid warp "$batch" "${humanoids[@]}"
  physics gym:humanoid warp "$batch2" "${humanoids[@]}"
  physics gym:ant,gym:half_cheetah,gym:walker2d warp "$batch2"
else
  echo "usage: gpu_run.sh a|b" >&2
  exit 2
fi
echo "=== done, $((end - SECONDS)) s of the budget left" | tee -a "$log"
