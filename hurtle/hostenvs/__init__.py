"""Host environments: batches of environments stepped on the host CPU for Sebulba's actor threads.

- `MujocoEnv`: hurtle's physics tasks on MuJoCo C (`mujoco.batch.Batch`), observations, rewards,
  terminations and resets from the task's own JAX definition.
- `GymnasiumEnv`: any Gymnasium environment (an id or a constructor), vectorised sync or async.
- `hurtle.hostenvs.envpool.EnvPoolEnv`: EnvPool's environments (the `envpool` extra; imported on use).

Both implement `HostEnv`: numpy in and out, episodes restarting on the step that ends them with the ended
episode's last observation in `HostStep.final_obs`.
"""

from hurtle.hostenvs.base import HostEnv, HostStep
from hurtle.hostenvs.gymnasium import GymnasiumEnv
from hurtle.hostenvs.mujoco_c import MujocoEnv

__all__ = ["GymnasiumEnv", "HostEnv", "HostStep", "MujocoEnv"]
