"""What the adapters share: jitted `reset` and `step` (one compiled program per environment object and
input shape), the conversion of actions coming from outside, and frames of a state (`StateRenderer`)."""

from typing import Any

import jax
import numpy as np

from hurtle.envs.base import Discrete, Env

reset = jax.jit(lambda env, key: env.reset(key), static_argnums=0)
step = jax.jit(lambda env, state, action: env.step(state, action), static_argnums=0)


def observation(obs: Any, privileged: Any) -> np.ndarray | dict[str, np.ndarray]:
    """Host float32 observations: the array, or for a task with a privileged observation a dict of `"state"` and
    `"privileged_state"` (MuJoCo Playground's and EnvPool's names)."""
    obs = np.array(obs, np.float32)
    return obs if privileged is None else {"state": obs, "privileged_state": np.array(privileged, np.float32)}


def cast_action(env: Env, action: Any, batch: tuple[int, ...] = ()) -> np.ndarray:
    """`action` as an array of the task's action dtype (integer for a discrete space), shape checked."""
    space = env.action_space
    action = np.asarray(action)
    shape = batch + space.shape
    if action.shape != shape:
        raise ValueError(f"{env!r}: action has shape {action.shape}, expected {shape}")
    if isinstance(space, Discrete):
        if not np.issubdtype(action.dtype, np.integer):
            raise ValueError(f"{env!r}: a discrete action must be an integer, got {action.dtype}")
        return action
    return action.astype(space.dtype)


class StateRenderer:
    """RGB frames of a physics task's states by MuJoCo's renderer (`hurtle.io.video.Renderer`, created on the
    first frame). ValueError at construction, naming the environment, when it has no MJCF model."""

    def __init__(self, env: Env, width: int = 640, height: int = 480, camera: str | None = None):
        from hurtle.envs.physics_env import PhysicsEnv

        if not isinstance(env.unwrapped, PhysicsEnv):
            raise ValueError(
                f"{env!r} has no MJCF model to render ({type(env.unwrapped).__name__} is not a physics task)"
            )
        self.env, self.width, self.height, self.camera = env, width, height, camera
        self._renderer = None

    @property
    def fps(self) -> float:
        """The frame rate of one frame per step: 1 / (control period x action repeat)."""
        return round(1.0 / (self.env.unwrapped.dt * getattr(self.env, "action_repeat", 1)), 3)

    def render(self, state: Any) -> np.ndarray:
        """The frame `[height, width, 3]` uint8 of `state` (one environment's)."""
        from hurtle.io.video import Renderer

        if state is None:
            raise RuntimeError("call reset() before render()")
        if self._renderer is None:
            self._renderer = Renderer(self.env.unwrapped, self.width, self.height, camera=self.camera)
        return self._renderer.render(np.asarray(jax.device_get(state.physics.qpos), np.float64))

    def close(self) -> None:
        if self._renderer is not None:
            self._renderer.close()
            self._renderer = None
