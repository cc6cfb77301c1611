"""Acrobot-v1 with Gymnasium's dynamics ("book" equations of Sutton and Barto), reward and termination.

State `[theta1, theta2, dtheta1, dtheta2]`; observation `[cos theta1, sin theta1, cos theta2, sin theta2,
dtheta1, dtheta2]`. Three actions apply a torque of -1, 0 or +1 to the joint between the links; one RK4
step of 0.2 s, then the angles are wrapped into [-pi, pi] and the velocities bounded by 4 pi and 9 pi.
It terminates when the tip rises one link length above the base (`-cos t1 - cos(t1 + t2) > 1`); reward
-1 per step, 0 on the terminating one. Gymnasium's time limit is 500 steps; torque noise is zero.
"""

from __future__ import annotations

import jax
import jax.numpy as jnp
import numpy as np
from jax import lax

from hurtle.envs.base import Box, Discrete
from hurtle.envs.classic.base import ClassicControl

pi = np.pi


def wrap(x: jax.Array, m: float, M: float) -> jax.Array:
    """`x` moved into [m, M] by whole turns, one subtraction (or addition) at a time as Gymnasium's
    `wrap`, so the rounding matches; a non-finite `x` is returned unchanged instead of looping."""
    diff = M - m
    x = lax.while_loop(lambda v: (v > M) & jnp.isfinite(v), lambda v: v - diff, x)
    return lax.while_loop(lambda v: (v < m) & jnp.isfinite(v), lambda v: v + diff, x)


def bound(x: jax.Array, m: float, M: float) -> jax.Array:
    """`min(max(x, m), M)`."""
    return jnp.minimum(jnp.maximum(x, m), M)


class Acrobot(ClassicControl):
    """Acrobot-v1 in JAX; `reset_to([theta1, theta2, dtheta1, dtheta2])`."""

    state_size = 4
    dt = 0.2
    LINK_LENGTH_1 = 1.0
    LINK_MASS_1 = 1.0
    LINK_MASS_2 = 1.0
    LINK_COM_POS_1 = 0.5
    LINK_COM_POS_2 = 0.5
    LINK_MOI = 1.0
    MAX_VEL_1 = 4 * pi
    MAX_VEL_2 = 9 * pi
    AVAIL_TORQUE = (-1.0, 0.0, 1.0)

    @property
    def observation_space(self) -> Box:
        high = np.array([1.0, 1.0, 1.0, 1.0, self.MAX_VEL_1, self.MAX_VEL_2])
        return Box(-high, high, dtype=self.dtype)

    @property
    def action_space(self) -> Discrete:
        return Discrete(3)

    def sample_state(self, key: jax.Array) -> jax.Array:
        return jax.random.uniform(key, (4,), self.dtype, -0.1, 0.1)

    def observation(self, s: jax.Array) -> jax.Array:
        return jnp.stack([jnp.cos(s[0]), jnp.sin(s[0]), jnp.cos(s[1]), jnp.sin(s[1]), s[2], s[3]])

    def dsdt(self, s: jax.Array, a: jax.Array) -> jax.Array:
        """Time derivative of the state under torque `a` (Gymnasium's `_dsdt`, book variant)."""
        m1, m2 = self.LINK_MASS_1, self.LINK_MASS_2
        l1, lc1, lc2 = self.LINK_LENGTH_1, self.LINK_COM_POS_1, self.LINK_COM_POS_2
        I1 = I2 = self.LINK_MOI
        g = 9.8
        theta1, theta2, dtheta1, dtheta2 = s
        d1 = m1 * lc1**2 + m2 * (l1**2 + lc2**2 + 2 * l1 * lc2 * jnp.cos(theta2)) + I1 + I2
        d2 = m2 * (lc2**2 + l1 * lc2 * jnp.cos(theta2)) + I2
        phi2 = m2 * lc2 * g * jnp.cos(theta1 + theta2 - pi / 2.0)
        phi1 = (
            -m2 * l1 * lc2 * dtheta2**2 * jnp.sin(theta2)
            - 2 * m2 * l1 * lc2 * dtheta2 * dtheta1 * jnp.sin(theta2)
            + (m1 * lc1 + m2 * l1) * g * jnp.cos(theta1 - pi / 2)
            + phi2
        )
        ddtheta2 = (a + d2 / d1 * phi1 - m2 * l1 * lc2 * dtheta1**2 * jnp.sin(theta2) - phi2) / (
            m2 * lc2**2 + I2 - d2**2 / d1
        )
        ddtheta1 = -(d2 * ddtheta2 + phi1) / d1
        return jnp.stack([dtheta1, dtheta2, ddtheta1, ddtheta2])

    def transition(self, s, action):
        torque = jnp.asarray(self.AVAIL_TORQUE, self.dtype)[action]
        # one classical RK4 step over [0, dt], Gymnasium's `rk4` (the torque is held constant)
        dt = self.dt
        dt2 = dt / 2.0
        k1 = self.dsdt(s, torque)
        k2 = self.dsdt(s + dt2 * k1, torque)
        k3 = self.dsdt(s + dt2 * k2, torque)
        k4 = self.dsdt(s + dt * k3, torque)
        ns = s + dt / 6.0 * (k1 + 2 * k2 + 2 * k3 + k4)
        ns = jnp.stack(
            [
                wrap(ns[0], -pi, pi),
                wrap(ns[1], -pi, pi),
                bound(ns[2], -self.MAX_VEL_1, self.MAX_VEL_1),
                bound(ns[3], -self.MAX_VEL_2, self.MAX_VEL_2),
            ]
        )
        terminated = -jnp.cos(ns[0]) - jnp.cos(ns[1] + ns[0]) > 1.0
        return ns, jnp.where(terminated, 0.0, -1.0), terminated
