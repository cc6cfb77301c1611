"""EnvPool's C++ twins of MuJoCo Playground's tasks as references for hurtle's (EnvPool 1.2.5, `pip install envpool`).

EnvPool has no call that sets a simulation's state, so hurtle's task is put into EnvPool's: from EnvPool's reset,
whose distribution is known (the home pose turned by a random yaw and moved by a random x, y, with random base
velocities), the yaw and the base's velocities are solved from the observation (the IMU's angular velocity in its
own frame and in the world's, its linear velocity), the joints read from the privileged observation; x and y do not
matter on flat ground. Commands are EnvPool's: copied into hurtle's task state after every step (both draw their
own, from different generators).
"""

from __future__ import annotations

import mujoco
import numpy as np

VERSION = "1.2.5"  # the EnvPool these comparisons were written against
MUJOCO = "3.6.0"  # the MuJoCo C EnvPool 1.2.5 bundles (its playground_envpool.so), not the one hurtle follows


def envpool_or_skip():
    """EnvPool, or the test skipped naming it (CI installs it: `.ci/run`, HURTLE_REQUIRE_EXTRAS)."""
    from tests.conftest import require_or_skip

    require_or_skip("envpool")
    import envpool

    return envpool


def turned_home(mj: mujoco.MjModel, home_qpos: np.ndarray, joints: np.ndarray, yaw: float) -> np.ndarray:
    """The home pose turned by `yaw` about the world's z (Playground's `quat_home * quat_z(yaw)`), joints set."""
    q = home_qpos.copy()
    q[7:] = joints
    turn = np.array([np.cos(yaw / 2), 0.0, 0.0, np.sin(yaw / 2)])
    mujoco.mju_mulQuat(q[3:7], home_qpos[3:7], turn)
    return q


def base_state(
    mj: mujoco.MjModel,
    home_qpos: np.ndarray,
    joints: np.ndarray,
    joint_vel: np.ndarray,
    site: str,
    gyro: np.ndarray,
    world_angvel: np.ndarray,
    local_linvel: np.ndarray,
) -> tuple[np.ndarray, np.ndarray]:
    """(qpos, qvel) of a free-floating robot at its home height whose IMU site reads `gyro` (angular velocity in the
    site's frame), `world_angvel` (the same in the world's) and `local_linvel` (the site's velocity in its frame).

    The yaw turns the site's angular velocity at yaw 0 onto the world's; the free joint's velocity is the site's
    less the rotation's share at the site's offset from the body's origin, in the world (linear) and the body's
    (angular) frames, as MuJoCo's free joint holds them."""
    d = mujoco.MjData(mj)
    s = mj.site(site)
    body = s.bodyid

    def at(yaw):
        d.qpos[:] = turned_home(mj, home_qpos, joints, yaw)
        mujoco.mj_kinematics(mj, d)
        return d.qpos.copy(), d.site_xmat[s.id].reshape(3, 3)

    _, rot = at(0.0)
    u = rot @ gyro
    yaw = float(
        np.arctan2(u[0] * world_angvel[1] - u[1] * world_angvel[0], u[0] * world_angvel[0] + u[1] * world_angvel[1])
    )
    qpos, rot = at(yaw)
    w = rot @ gyro
    offset = d.site_xpos[s.id] - d.xpos[body]
    qvel = np.zeros(mj.nv)
    qvel[0:3] = rot @ local_linvel - np.cross(w, offset)
    qvel[3:6] = d.xmat[body].reshape(3, 3).T @ w
    qvel[6:] = joint_vel
    return qpos, qvel


def starts(task, qpos, qvel=None, ctrl=None) -> list:
    """`task.begin(task.reset_to(qpos[i], qvel[i], ctrl[i]), key(i))` for each row (None: the model's defaults),
    through one jitted function (compiled once; eager, each reset dispatches op by op)."""
    import jax
    import jax.numpy as jnp

    n = len(qpos)
    start = jax.jit(lambda q, v, c, k: task.begin(task.reset_to(q, v, c), k))
    rows = [None if x is None else jnp.asarray(np.asarray(x)) for x in (qvel, ctrl)]
    return [
        start(jnp.asarray(qpos[i]), *(None if x is None else x[i] for x in rows), jax.random.key(i)) for i in range(n)
    ]


def stack(states):
    """One batched state from a list of single ones."""
    import jax
    import jax.numpy as jnp

    return jax.tree.map(lambda *x: jnp.stack(x), *states)


def with_info(state, **values):
    """`state` with these `info` entries replaced (EnvPool's commands and timers), each in the entry's dtype."""
    import jax.numpy as jnp

    info = dict(state.info)
    for key, value in values.items():
        info[key] = jnp.asarray(value).astype(info[key].dtype)
    return state.replace(info=info)


def compare(
    task,
    pool,
    state,
    info,
    steps: int,
    amplitude: float,
    follow=None,
    tol: float = 1e-5,
    seed: int = 0,
    quirk=None,
    raw_terms: bool = False,
) -> int:
    """Step EnvPool's `pool` and hurtle's batched `state` (rebuilt from the pool's reset, whose `info` is `info`)
    together under the same uniform random actions in [-amplitude, amplitude]: every step's observation,
    privileged observation, reward terms (EnvPool's `reward_<term>`), reward and termination within `tol`, each
    environment until its episode ends (EnvPool restarts it from a state of its own), for `steps` steps.
    `follow(state, info)` copies EnvPool's commands into hurtle's state after each step (None: nothing to copy). A
    task without a privileged observation is compared with EnvPool's array observation; `raw_terms`: EnvPool logs
    each reward term unscaled (hurtle's `reward/<term>` is scaled by the task's `scales`). `quirk(obs, info, last_info)` undoes a documented difference of EnvPool's from Playground in its
    observation dict before the comparison. Returns the (environment, step) pairs compared."""
    import jax
    import jax.numpy as jnp

    step = jax.jit(jax.vmap(task.step))
    rng = np.random.default_rng(seed)
    n, nu = state.obs.shape[0], task.action_space.shape[0]
    alive, compared = np.ones(n, bool), 0
    for t in range(steps):
        action = rng.uniform(-amplitude, amplitude, (n, nu))
        last_info = info
        obs, reward, terminated, _, info = pool.step(action)
        obs = {k: np.array(v) for k, v in obs.items()} if isinstance(obs, dict) else {"state": np.array(obs)}
        if quirk is not None:
            obs = quirk(obs, info, last_info)
        state = step(state, jnp.asarray(action))
        rows, where = alive.copy(), f"step {t}"
        np.testing.assert_allclose(np.asarray(state.obs)[rows], obs["state"][rows], atol=tol, err_msg=where)
        if state.privileged_obs is not None:
            ours = np.asarray(state.privileged_obs)[rows]
            np.testing.assert_allclose(ours, obs["privileged_state"][rows], atol=tol, err_msg=where)
        for key in task.SCALES:
            got, want = np.asarray(state.metrics[f"reward/{key}"])[rows], info[f"reward_{key}"][rows]
            want = want * task.scales[key] if raw_terms else want
            np.testing.assert_allclose(got, want, atol=tol, err_msg=f"{key}, {where}")
        np.testing.assert_allclose(np.asarray(state.reward)[rows], reward[rows], atol=tol, err_msg=where)
        np.testing.assert_array_equal(np.asarray(state.done)[rows], terminated[rows], err_msg=where)
        compared += int(rows.sum())
        alive &= ~terminated  # an ended episode restarts in EnvPool from a state of its own: left out from here
        if not alive.any():
            break
        state = state if follow is None else follow(state, info)
    return compared
