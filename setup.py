"""Builds the `kiln` package's extension kiln._kiln with CMake (pyproject.toml; docs/python.md).

libkiln is built static into the extension (it links the system's shared Boost, as a Python
extension must), together with the remote backends' module libkiln-remote.so, which goes into
the package beside the extension, where libkiln looks for it. Environment:
    CMAKE_ARGS                   extra arguments to CMake's configure step (e.g. a compiler launcher)
    CMAKE_BUILD_PARALLEL_LEVEL   parallel build jobs (default: every CPU)
The version is the one of the top-level CMakeLists.txt's project().
"""

import os
import re
import shlex
import subprocess
import sys
from pathlib import Path

from setuptools import Extension, setup
from setuptools.command.build_ext import build_ext

ROOT = Path(__file__).resolve().parent
BUILD_BASE = "build-python"
(ROOT / BUILD_BASE).mkdir(exist_ok=True)


def project_version():
    text = (ROOT / "CMakeLists.txt").read_text()
    match = re.search(r"project\(\s*kiln\s+VERSION\s+([0-9][0-9.]*)", text)
    if not match:
        raise RuntimeError("CMakeLists.txt: no `project(kiln VERSION x.y.z ...)` to take the version from")
    return match.group(1)


class CMakeExtension(Extension):
    """An extension CMake builds (no sources of its own for setuptools)."""

    def __init__(self, name, target):
        super().__init__(name, sources=[])
        self.target = target


class CMakeBuild(build_ext):
    def build_extension(self, ext):
        destination = Path(self.get_ext_fullpath(ext.name)).resolve()
        build_dir = Path(self.build_temp).resolve() / "cmake"
        build_dir.mkdir(parents=True, exist_ok=True)
        config = "Debug" if self.debug else "Release"
        configure = [
            "cmake", "-S", str(ROOT), "-B", str(build_dir),
            f"-DCMAKE_BUILD_TYPE={config}",
            f"-DPython3_EXECUTABLE={sys.executable}",
            "-DKILN_BUILD_PYTHON=ON", "-DKILN_SHARED=OFF", "-DKILN_STATIC_BOOST=OFF",
            "-DKILN_BUILD_TESTS=OFF", "-DKILN_BUILD_BENCH=OFF", "-DKILN_BUILD_PLUGINS=OFF",
        ]
        configure += shlex.split(os.environ.get("CMAKE_ARGS", ""))
        build = ["cmake", "--build", str(build_dir), "--target", ext.target, "kiln_remote_backends"]
        if "CMAKE_BUILD_PARALLEL_LEVEL" not in os.environ:
            build += ["--parallel", str(self.parallel or os.cpu_count() or 1)]
        subprocess.run(configure, check=True)
        subprocess.run(build, check=True)

        built = sorted((build_dir / "python" / "kiln").glob("_kiln*.so"))
        remote = sorted(build_dir.glob("lib/kiln/libkiln-remote.so"))
        if len(built) != 1 or len(remote) != 1:
            raise RuntimeError(f"{build_dir}: expected one python/kiln/_kiln*.so and one lib/kiln/libkiln-remote.so, "
                               f"found {[str(p) for p in built + remote]}")
        destination.parent.mkdir(parents=True, exist_ok=True)
        self.copy_file(str(built[0]), str(destination))
        self.copy_file(str(remote[0]), str(destination.parent / remote[0].name))


setup(
    version=project_version(),
    ext_modules=[CMakeExtension("kiln._kiln", target="kiln_python")],
    cmdclass={"build_ext": CMakeBuild},
    # setuptools' own build directory and metadata: beside a CMake tree in build/, not inside it
    # nor in the sources (python/kiln.egg-info).
    options={"build": {"build_base": BUILD_BASE}, "egg_info": {"egg_base": BUILD_BASE}},
    zip_safe=False,
)
