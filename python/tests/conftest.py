"""Fixtures of the kiln Python tests.

Every test gets its own store: a temporary KILN_CACHE_DIR, no KILN_STORE_PATH, and a declared
device (KILN_DEVICE, default sm_90), set before any kiln.Runtime is made, so tests run the same
with or without a GPU. Test artifacts come from environment variables (the ctest entry sets the
ones its build tree has); a test whose artifact or toolchain is missing skips with the reason:

    KILN_TEST_HOST_PLUGIN     a host-only plugin offering kiln.example/1 (tests/plugins: kiln_test_host_only);
                              without it, the examples/plugin recipe is built with nvcc instead
    KILN_TEST_IK_PLUGIN       an IK plugin of the iiwa14 chain (plugins/ik: libkiln_ik_iiwa14.so)
    KILN_TEST_TRAJOPT_PLUGIN  a TrajOpt plugin of the iiwa14 chain (libkiln_trajopt_iiwa14_n64.so)
    KILN_TEST_PLUGIN_ARCHS    what the IK/TrajOpt plugins were built for (default sm_90,compute_90)
    KILN_TEST_DEVICE          the declared device (default sm_90)
    KILN_TEST_CLI             the kiln CLI, for the cross-checks against it
    KILN_TEST_SKIP_FILE       where to append "SKIPPED <test>: <why>" (ctest prints it after its summary)
"""

import os
import pathlib
import shutil

import pytest

import kiln

REPO = pathlib.Path(__file__).resolve().parents[2]
EXAMPLE_PLUGIN_SOURCE = REPO / "examples" / "plugin" / "plugin.cpp"
PLUGIN_ARCHS = os.environ.get("KILN_TEST_PLUGIN_ARCHS", "sm_90,compute_90")
DEVICE = os.environ.get("KILN_TEST_DEVICE", "sm_90")


def example_recipe(name="fma-built", defines=()):
    """The host-only recipe scripts/test-install builds: examples/plugin/plugin.cpp with nvcc."""
    recipe = {"schema": 1, "consumer": "example", "name": name, "sources": ["plugin.cpp"],
              "archs": ["sm_90"], "artifact": "libexample_fma.so"}
    if defines:
        recipe["defines"] = list(defines)
    return recipe


@pytest.fixture(autouse=True)
def store(tmp_path, monkeypatch):
    """The test's own writable store (its path)."""
    cache = tmp_path / "cache"
    monkeypatch.setenv("KILN_CACHE_DIR", str(cache))
    monkeypatch.delenv("KILN_STORE_PATH", raising=False)
    monkeypatch.delenv("KILN_ABI_DIR", raising=False)
    monkeypatch.setenv("KILN_DEVICE", DEVICE)
    return cache


@pytest.fixture
def runtime(store):
    return kiln.Runtime()


def _toolchain_missing():
    """Why nvcc recipes cannot build here, or None."""
    toolchain = kiln.Runtime(device=DEVICE).toolchain()
    for tool in ("nvcc", "host_compiler"):
        if not toolchain[tool]["found"]:
            return f"no {tool} ({toolchain[tool]['detail']})"
    return None


@pytest.fixture(scope="session")
def nvcc_reason():
    return _toolchain_missing()


@pytest.fixture
def nvcc(nvcc_reason):
    """Skips the test where nvcc recipes cannot build."""
    if nvcc_reason:
        pytest.skip(f"needs nvcc and a host compiler to build recipes: {nvcc_reason}")


@pytest.fixture
def recipe_dir(tmp_path):
    """A directory holding the example plugin's source, for dict recipes (base_dir=)."""
    directory = tmp_path / "recipe"
    directory.mkdir()
    shutil.copy(EXAMPLE_PLUGIN_SOURCE, directory / "plugin.cpp")
    return directory


@pytest.fixture(scope="session")
def host_plugin(tmp_path_factory, nvcc_reason):
    """Path of a host-only kiln plugin offering kiln.example/1."""
    given = os.environ.get("KILN_TEST_HOST_PLUGIN")
    if given:
        if not os.path.isfile(given):
            pytest.fail(f"KILN_TEST_HOST_PLUGIN={given} does not exist")
        return given
    if nvcc_reason:
        pytest.skip(f"no KILN_TEST_HOST_PLUGIN given and cannot build examples/plugin: {nvcc_reason}")
    work = tmp_path_factory.mktemp("host-plugin")
    shutil.copy(EXAMPLE_PLUGIN_SOURCE, work / "plugin.cpp")
    runtime = kiln.Runtime(cache_dir=work / "cache", store_path=[], device=DEVICE)
    runtime.build(example_recipe(), base_dir=work)
    return runtime.resolve("example", "fma-built")["file"]


def _plugin_from_env(variable, what):
    path = os.environ.get(variable)
    if not path:
        pytest.skip(f"{what}: set {variable} to the plugin file (the ctest entry does where the tree builds it)")
    if not os.path.isfile(path):
        pytest.fail(f"{variable}={path} does not exist")
    return path


@pytest.fixture
def ik_plugin():
    return _plugin_from_env("KILN_TEST_IK_PLUGIN", "no IK plugin")


@pytest.fixture
def trajopt_plugin():
    return _plugin_from_env("KILN_TEST_TRAJOPT_PLUGIN", "no TrajOpt plugin")


@pytest.fixture
def cli():
    path = os.environ.get("KILN_TEST_CLI") or shutil.which("kiln")
    if not path:
        pytest.skip("no kiln CLI: set KILN_TEST_CLI")
    return path


def pytest_runtest_logreport(report):
    """Each skip, with its reason, into KILN_TEST_SKIP_FILE (ctest prints it after its summary)."""
    skip_file = os.environ.get("KILN_TEST_SKIP_FILE")
    if not skip_file or not report.skipped:
        return
    reason = report.longrepr[2] if isinstance(report.longrepr, tuple) else str(report.longrepr)
    reason = reason.removeprefix("Skipped: ")
    os.makedirs(os.path.dirname(skip_file), exist_ok=True)
    with open(skip_file, "a", encoding="utf-8") as out:
        out.write(f"SKIPPED {report.nodeid}: {reason}\n")
