"""Fixed tendons: `ten_length`, the dense Jacobian `ten_J` (ntendon x nv) and `ten_velocity`."""

from __future__ import annotations

import jax
import jax.numpy as jnp
import numpy as np

from hurtle.physics import math, tracing
from hurtle.physics.types import Data, Model


@tracing.inline_numpy
def tendon(m: Model, d: Data) -> Data:
    """Lengths and Jacobians of fixed tendons: linear combinations of joint positions (mj_tendon)."""
    with jax.named_scope("tendon"):
        if m.ntendon == 0:
            return d
        # wrap entry w belongs to tendon ten_of[w] and names joint wrap_objid[w]
        ten_of = np.repeat(np.arange(m.ntendon), m.tendon_num)
        wraps = np.concatenate([np.arange(a, a + n) for a, n in zip(m.tendon_adr, m.tendon_num)])
        jnt = m.wrap_objid[wraps]
        coef = m.wrap_prm[wraps]
        length = jnp.zeros(m.ntendon, d.qpos.dtype).at[ten_of].add(coef * d.qpos[m.jnt_qposadr[jnt]])
        ten_j = jnp.zeros((m.ntendon, m.nv), d.qpos.dtype).at[ten_of, m.jnt_dofadr[jnt]].add(coef)
        return d.replace(ten_length=length, ten_J=ten_j)


def tendon_velocity(m: Model, d: Data) -> Data:
    if m.ntendon == 0:
        return d
    return d.replace(ten_velocity=math.matmul(d.ten_J, d.qvel))
