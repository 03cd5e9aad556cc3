"""What the binding takes: import without numpy, kiln's typed errors for wrong arguments (never
pybind11's "Unable to cast"), and the CLI's forms of archs."""

import json
import os
import subprocess
import sys

import pytest

import kiln
from conftest import PLUGIN_ARCHS, example_recipe

NO_PYBIND11_TEXT = ("Unable to cast", "incompatible function arguments")


def run_python(code):
    """code in a fresh interpreter that imports the same kiln (sys.path and the test's environment)."""
    env = dict(os.environ, PYTHONPATH=os.pathsep.join(p for p in sys.path if p))
    return subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, env=env, timeout=120)


def test_import_and_non_array_calls_need_no_numpy():
    done = run_python(
        "import sys\n"
        "sys.modules['numpy'] = None  # import numpy now raises ImportError\n"
        "import kiln\n"
        "rt = kiln.Runtime()\n"
        "assert rt.list() == [] and rt.devices()['effective']\n"
        "try:\n"
        "    rt.resolve('no-such-consumer', 'x')\n"
        "except kiln.NotFoundError:\n"
        "    pass\n"
        "print('ok', kiln.__version__)\n")
    assert done.returncode == 0, done.stderr
    assert done.stdout.startswith("ok ")


def test_import_does_not_load_numpy():
    done = run_python("import sys, kiln\nkiln.Runtime().list()\nprint('numpy' in sys.modules)\n")
    assert done.returncode == 0, done.stderr
    assert done.stdout.strip() == "False"


def test_argument_classes():
    assert issubclass(kiln.ArgumentTypeError, kiln.UsageError) and issubclass(kiln.ArgumentTypeError, TypeError)
    assert issubclass(kiln.ArgumentValueError, kiln.UsageError) and issubclass(kiln.ArgumentValueError, ValueError)
    assert kiln.ArgumentTypeError.exit_code == kiln.ArgumentValueError.exit_code == 2
    assert kiln.ArgumentTypeError.__module__ == "kiln"


@pytest.mark.parametrize("call,match", [
    (lambda rt: rt.plan(42), "recipe: expected a kiln.Recipe, a path or a dict, got int"),
    (lambda rt: rt.gc(older_than=30), "older_than: expected an age"),
    (lambda rt: rt.gc(max_size=1.5), "max_size: expected bytes"),
    (lambda rt: rt.plan(example_recipe(), archs=5), "archs: expected None"),
    (lambda rt: rt.plan(example_recipe(), archs=["sm_90", 90]), "archs: expected arch names .str.* got int"),
    (lambda rt: rt.publish("tests", "x", "/nonexistent.so", archs=[None]), "archs: .* got NoneType"),
    (lambda rt: kiln.Runtime(device=90), "device: expected a device declaration .* got int"),
])
def test_wrong_argument_types_are_named(runtime, recipe_dir, monkeypatch, call, match):
    monkeypatch.chdir(recipe_dir)  # a dict recipe's sources: from the current directory
    with pytest.raises(kiln.ArgumentTypeError, match=match) as raised:
        call(runtime)
    assert isinstance(raised.value, TypeError) and raised.value.exit_code == 2
    assert not any(text in str(raised.value) for text in NO_PYBIND11_TEXT)


def publish_json(cli, *args):
    done = subprocess.run([cli, "publish", *args, "--json"], capture_output=True, text=True, env=os.environ)
    return done.returncode, done.stdout, done.stderr


def test_publish_archs_take_the_cli_forms(runtime, store, host_plugin, cli):
    python = runtime.publish("tests", "fma", host_plugin, archs="none")
    assert runtime.resolve("tests", "fma")["identity"]["archs"] == []
    code, out, err = publish_json(cli, "--consumer", "tests", "--name", "fma", "--artifact", host_plugin,
                                  "--arch", "none")
    assert code == 0, err
    assert json.loads(out)["content_key"] == python["content_key"] and json.loads(out)["reused"]
    # The list form says the same; an empty list is the default (the archs the file holds: none).
    assert runtime.publish("tests", "fma", host_plugin, archs=["none"])["content_key"] == python["content_key"]
    assert runtime.publish("tests", "fma", host_plugin, archs=[])["content_key"] == python["content_key"]
    # What the CLI refuses, Python refuses alike.
    for bad in ("none,sm_90", "sm_9x", "sm_90,,sm_87"):
        code, _, err = publish_json(cli, "--consumer", "tests", "--name", "fma", "--artifact", host_plugin, "--arch", bad)
        assert code == 2, (bad, err)
        with pytest.raises(kiln.UsageError):
            runtime.publish("tests", "fma", host_plugin, archs=bad)


def test_publish_archs_none_refuses_device_code(runtime, ik_plugin):
    with pytest.raises(kiln.IntegrityError):
        runtime.publish("kiln-ik", "iiwa14", ik_plugin, archs="none")


@pytest.fixture
def ik(runtime, ik_plugin):
    runtime.publish("kiln-ik", "iiwa14", ik_plugin, archs=PLUGIN_ARCHS)
    with runtime.load("kiln-ik", "iiwa14").ik() as solver:
        yield solver


def expect(cls, call, *words):
    with pytest.raises(cls) as raised:
        call()
    assert isinstance(raised.value, kiln.UsageError) and raised.value.exit_code == 2
    text = str(raised.value)
    assert all(word in text for word in words), text
    assert not any(bad in text for bad in NO_PYBIND11_TEXT), text


def test_solver_array_arguments_are_named(ik):
    np = pytest.importorskip("numpy")
    targets = np.tile(np.array([0.5, 0, 0.5, 1, 0, 0, 0], np.float32), (3, 1))
    q = np.zeros((3, 7), np.float32)
    # An object of the wrong kind: TypeError subclasses, naming the argument and what it takes.
    expect(kiln.ArgumentTypeError, lambda: ik.solve(targets, out=np.zeros(3)),
           "IK.solve(): out", "kiln.IKResult", "numpy.ndarray of shape (3,) and dtype float64")
    expect(kiln.ArgumentTypeError, lambda: ik.solve("targets"), "IK.solve(): targets", "(n, 7)", "float32", "got str")
    expect(kiln.ArgumentTypeError, lambda: ik.solve(targets, initial_q=object()), "IK.solve(): initial_q", "(n, 7)")
    expect(kiln.ArgumentTypeError, lambda: ik.fk(q, out=[0.0] * 7), "IK.fk(): out", "got list")
    # The right kind, the wrong shape or dtype: ValueError subclasses.
    expect(kiln.ArgumentValueError, lambda: ik.fk(q, out=np.zeros(3)),
           "IK.fk(): out", "float32 array of shape (3, 7)", "shape (3,) and dtype float64")
    expect(kiln.ArgumentValueError, lambda: ik.fk(q, out=np.zeros((3, 7))), "IK.fk(): out", "dtype float64")
    expect(kiln.ArgumentValueError, lambda: ik.solve(np.zeros((3, 6), np.float32)), "IK.solve(): targets", "(n, 7)")
    expect(kiln.ArgumentValueError, lambda: ik.solve(targets, q[:2]), "IK.solve(): initial_q has 2 rows, targets 3")
    # A right out= is still written in place.
    out = np.empty((3, 7), np.float32)
    assert ik.fk(q, out=out) is out
