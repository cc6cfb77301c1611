#!/usr/bin/env bash
# Assess a MuJoCo release against hurtle's physics, by hand: one command when a new version is out.
#
#   bash benchmarks/mujoco_versions.sh              # the newest MuJoCo the package registry serves
#   bash benchmarks/mujoco_versions.sh 4.1.0        # a given version
#   PARITY_TESTS="tests/physics/test_collision.py" bash benchmarks/mujoco_versions.sh   # a subset
#
# It makes a throwaway virtualenv (.mujoco-VERSION/, removed at the end unless KEEP=1), installs hurtle with its
# test extra and then that MuJoCo (and a dm_control that accepts it, where the registry has one), and runs the
# physics parity tests (tests/physics, every stage and sensor against MuJoCo C in float64, by default) against it.
# The last lines say which version was tested and how many tests passed and failed; a failing test names the MuJoCo
# it was compared with (tests/physics/conftest.py). pyproject's `mujoco>=...` moves when this passes.
set -euo pipefail
cd "$(dirname "$0")/.."
version="${1:-}"
if [ -z "$version" ]; then
  version="$(python3 -m pip index versions mujoco 2>/dev/null | sed -n 's/^mujoco (\(.*\))$/\1/p')"
  [ -n "$version" ] || { echo "mujoco_versions.sh: could not ask the package registry for MuJoCo's versions" >&2; exit 1; }
fi
venv=".mujoco-$version"
cleanup() { [ "${KEEP:-0}" = 1 ] || rm -rf "$venv"; }
trap cleanup EXIT
python3 -m venv "$venv"
"$venv/bin/pip" install -q -e '.[test]'
"$venv/bin/pip" install -q "mujoco==$version" || { echo "mujoco_versions.sh: the registry has no mujoco $version" >&2; exit 1; }
"$venv/bin/pip" install -q --upgrade dm_control || true  # a dm_control built for this MuJoCo, where one exists
got="$("$venv/bin/python" -c 'import mujoco; print(mujoco.__version__)')"
echo "mujoco_versions.sh: MuJoCo $got, dm_control $("$venv/bin/python" -c 'import dm_control, importlib.metadata as m; print(m.version("dm_control"))' 2>/dev/null || echo 'not importable')"
status=0
"$venv/bin/python" -m pytest -q -p no:cacheprovider ${PARITY_TESTS:-tests/physics} | tail -25 || status=$?
echo "mujoco_versions.sh: the parity tests against MuJoCo $got: $([ $status = 0 ] && echo passed || echo FAILED)"
exit $status
