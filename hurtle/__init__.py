"""hurtle: reinforcement learning for robots with the simulator on the accelerator."""

from hurtle import xla_flags

xla_flags.configure()  # before JAX starts: XLA CPU code generation that maps few pages (hurtle/xla_flags.py)

__version__ = "0.1.0"
