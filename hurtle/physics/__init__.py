"""hurtle's rigid-body physics engine: MuJoCo's model and equations in JAX.

model = hurtle.physics.load("ant.xml")
data = hurtle.physics.make_data(model)
data = jax.jit(hurtle.physics.step)(model, data)
hurtle.physics.read_sensor(model, data, "imu_gyro")   # a sensor's values by name
"""

from hurtle.physics.actuation import actuation, transmission
from hurtle.physics.collision import collision
from hurtle.physics.constraint import contact_forces, make_constraint, reference_constraint, rne_post_constraint
from hurtle.physics.dynamics import com_vel, passive, rne
from hurtle.physics.forward import energy, euler, forward, implicit, integrate_pos, rk4, step
from hurtle.physics.inertia import crb, factor_m, solve_m
from hurtle.physics.io import from_mjdata, make_data, to_mujoco
from hurtle.physics.kinematics import com_pos, kinematics
from hurtle.physics.model import from_mujoco, load
from hurtle.physics.sensor import noisy as sensor_noise
from hurtle.physics.sensor import read as read_sensor
from hurtle.physics.sensor import sensors
from hurtle.physics.solver import solve
from hurtle.physics.tendon import tendon
from hurtle.physics.types import Contact, Data, Model, Option

__all__ = [
    "Contact",
    "collision",
    "contact_forces",
    "make_constraint",
    "reference_constraint",
    "rne_post_constraint",
    "solve",
    "Data",
    "Model",
    "Option",
    "actuation",
    "com_pos",
    "com_vel",
    "crb",
    "energy",
    "euler",
    "factor_m",
    "forward",
    "from_mjdata",
    "from_mujoco",
    "implicit",
    "integrate_pos",
    "kinematics",
    "load",
    "make_data",
    "passive",
    "rk4",
    "read_sensor",
    "rne",
    "sensor_noise",
    "sensors",
    "solve_m",
    "step",
    "tendon",
    "to_mujoco",
    "transmission",
]
