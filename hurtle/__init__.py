"""hurtle: reinforcement learning for robots with the simulator on the accelerator."""

__version__ = "0.1.0"
