"""kiln: resolve, check, load and build GPU solver plugins from Python.

    import kiln
    rt = kiln.Runtime()                      # stores and device from the environment
    module = rt.ensure("iiwa14.json")        # build on miss, then load
    ik = module.ik()
    ik.activate(0)                           # device 0; -1: host only
    result = ik.solve(targets)               # (n, 7) float32 -> result.q (n, dof)

Every failure is a kiln.Error subclass whose exit_code is the kiln CLI's (docs/python.md).
"""

from . import _arguments, _kiln
from ._kiln import (  # noqa: F401  (the public API, re-exported)
    ABI_VERSION,
    AbiError,
    ArgumentTypeError,
    ArgumentValueError,
    BuildError,
    Error,
    GpuPartition,
    IK,
    IKResult,
    IncompatibleError,
    Instance,
    IntegrityError,
    IoError,
    Module,
    NotFoundError,
    Recipe,
    Runtime,
    ToolchainMissingError,
    TrajOpt,
    TrajOptResult,
    UsageError,
    __version__,
)

# Every public call raises kiln.ArgumentTypeError for arguments of the wrong type or an unknown
# keyword, never pybind11's "incompatible function arguments" (kiln/_arguments.py says how).
_arguments.install(_kiln, ArgumentTypeError)
generate_keypair = _kiln.generate_keypair
key_list_init = _kiln.key_list_init
key_list_add = _kiln.key_list_add
key_list_revoke = _kiln.key_list_revoke
key_list_rotate_root = _kiln.key_list_rotate_root
read_key_list = _kiln.read_key_list

__all__ = [
    "ABI_VERSION",
    "AbiError",
    "ArgumentTypeError",
    "ArgumentValueError",
    "BuildError",
    "Error",
    "GpuPartition",
    "IK",
    "IKResult",
    "IncompatibleError",
    "Instance",
    "IntegrityError",
    "IoError",
    "Module",
    "NotFoundError",
    "Recipe",
    "Runtime",
    "ToolchainMissingError",
    "TrajOpt",
    "TrajOptResult",
    "UsageError",
    "__version__",
    "generate_keypair",
    "key_list_add",
    "key_list_init",
    "key_list_revoke",
    "key_list_rotate_root",
    "read_key_list",
]

# The classes live in kiln._kiln; they are documented, printed and found as kiln.<name>.
for _name in __all__:
    _value = globals()[_name]
    if isinstance(_value, type) and _value.__module__ == "kiln._kiln":
        _value.__module__ = __name__
del _name, _value
