"""A machine without OpenGL, for a subprocess (PYTHONPATH=tests/nogl): libEGL, libGL, libOSMesa and GLFW's library
cannot be loaded, as on a bare headless node without libegl1 (tests/test_first_hour.py)."""

import ctypes
import ctypes.util
import re

_BLOCK = re.compile(r"(^|/|lib)(EGL|GL|GLX|OSMesa|glfw)([._-]|$)")
_init = ctypes.CDLL.__init__


def _refuse(self, name, *args, **kwargs):
    if name and _BLOCK.search(str(name)):
        raise OSError(f"{name}: cannot open shared object file: No such file or directory")
    return _init(self, name, *args, **kwargs)


ctypes.CDLL.__init__ = _refuse
_find = ctypes.util.find_library
ctypes.util.find_library = lambda name: None if _BLOCK.search("lib" + name) else _find(name)
