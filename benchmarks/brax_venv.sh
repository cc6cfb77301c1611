#!/usr/bin/env bash
# Brax's own virtualenv for the physics benchmark's "brax" engine (Brax needs jax 0.9.x; hurtle runs 0.10):
#
#     bash benchmarks/brax_venv.sh            # makes .brax/ at the repository root
#     bash benchmarks/brax_venv.sh DIR        # elsewhere; then pass --brax-python DIR/bin/python
#
# The versions are pinned so that a table names what it ran; the worker reports them in its notes.
set -euo pipefail
cd "$(dirname "$0")/.."
dir=${1:-.brax}
python3 -m venv "$dir"
"$dir/bin/pip" install -q 'brax==0.14.2' 'jax[cpu]==0.9.2'
"$dir/bin/python" -c "import brax, jax; print('brax', brax.__version__, 'jax', jax.__version__)"
