"""python/examples/quickstart.py (the example of docs/python.md) runs and does what it says."""

import os
import pathlib
import subprocess
import sys

import pytest

from conftest import PLUGIN_ARCHS

QUICKSTART = pathlib.Path(__file__).resolve().parents[1] / "examples" / "quickstart.py"


def run(*args):
    return subprocess.run([sys.executable, str(QUICKSTART), *args], capture_output=True, text=True,
                          env=os.environ, timeout=300)


def test_quickstart(nvcc, store):
    first = run()
    assert first.returncode == 0, first.stderr
    assert "plan: example/fma-built is missing" in first.stdout
    assert "build: built" in first.stdout and "host_fma(2, 3, 4) = 10.0" in first.stdout
    assert str(store) in first.stdout
    second = run()  # the same store: a hit now
    assert second.returncode == 0, second.stderr
    assert "is cached" in second.stdout and "build: hit" in second.stdout


def test_quickstart_ik(nvcc, ik_plugin):
    done = run("--ik", ik_plugin, "--archs", PLUGIN_ARCHS)
    assert done.returncode == 0, done.stderr
    assert "lbr_iiwa_link_0 -> lbr_iiwa_link_7" in done.stdout
    assert "converged, median error" in done.stdout  # and exit 0: at least 99 % converged


def test_quickstart_exits_with_kiln_exit_codes(nvcc, monkeypatch):
    monkeypatch.setenv("KILN_DEVICE", "sm_9x")
    done = run()
    assert done.returncode == 2, done.stderr
    assert "UsageError" in done.stderr and "sm_9x" in done.stderr
