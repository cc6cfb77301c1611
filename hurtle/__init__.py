"""hurtle: reinforcement learning for robots with the simulator on the accelerator."""

from hurtle import xla_flags

xla_flags.configure()  # before JAX starts: XLA CPU code generation that maps few pages (hurtle/xla_flags.py)

from hurtle import gl  # noqa: E402

gl.configure()  # before mujoco is imported: a MUJOCO_GL under which it imports, whatever OpenGL is here (hurtle/gl.py)

__version__ = "0.1.0"
