#!/usr/bin/env bash
# The GPU physics table (#8) in one device call; ../shared/tools/GPU.md says how to call it:
#   carry [".whl", ".gpu"], where .whl holds the wheels the machine lacks (mujoco, mujoco-mjx, gymnasium...)
#   and .gpu/dmc a copy of dm_control/suite's humanoid.xml and common/ (dm_control is not installed there);
#   command: pip install the wheels into .site, export PYTHONPATH=$PWD/.site:$PWD, then
#   bash benchmarks/gpu_table.sh [BATCH] [MODELS]
# Each model's JSON line is printed as soon as both engines finish it (humanoid first: the 3M steps/s target),
# so a run cut short still reports what it measured (NCONMAX=16 ENGINES=hurtle: hurtle with a contact cap;
# NJMAX=0 ENGINES=hurtle: hurtle's solver on every row, no working set); the table goes to $OUT/results.md. XLA's GPU flags are
# left at their defaults for both engines.
set -u
batch=${1:-32768}
models=${2:-gym:humanoid,gym:ant,gym:half_cheetah,gym:walker2d,dmc:humanoid}
out=${OUT:-/tmp}
export DM_CONTROL_SUITE=${DM_CONTROL_SUITE:-$PWD/.gpu/dmc} PYTHONUNBUFFERED=1
nvidia-smi -L
python3 -c "import jax, mujoco; print('jax', jax.__version__, 'mujoco', mujoco.__version__, jax.devices())"
python3 benchmarks/physics.py --models "$models" --engines "${ENGINES:-hurtle,mjx}" --batch "$batch" --nsteps 100 --repeats 3 \
  --timeout "${TIMEOUT:-150}" ${NCONMAX:+--nconmax "$NCONMAX"} ${NJMAX:+--njmax "$NJMAX"} --out "$out/results.md"
