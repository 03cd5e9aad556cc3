"""kiln.IK on a real IK plugin (the iiwa14 chain), host only: activate(-1), no GPU needed.

Known forward kinematics (plugins/ik/robots/README.md): at q = 0 the iiwa's lbr_iiwa_link_7 sits
1.261 m straight above lbr_iiwa_link_0, orientation the identity.
"""

import threading

import numpy as np
import pytest

import kiln
from conftest import PLUGIN_ARCHS


@pytest.fixture
def module(runtime, ik_plugin):
    runtime.publish("kiln-ik", "iiwa14", ik_plugin, archs=PLUGIN_ARCHS)
    return runtime.load("kiln-ik", "iiwa14")


@pytest.fixture
def ik(module):
    with module.ik() as solver:
        yield solver


def test_required_robot_model(runtime, module):
    """The plugin records the model it was generated from; a host requiring another is refused."""
    models = runtime.resolve("kiln-ik", "iiwa14")["identity"]["models"]
    assert len(models) == 1
    assert models[0]["fingerprint"].startswith("xxh128:")
    loaded = runtime.load("kiln-ik", "iiwa14", model_fingerprint=models[0]["fingerprint"])
    assert loaded.report["resolution"]["identity"]["models"] == models
    other = "xxh128:" + "0" * 32
    with pytest.raises(kiln.IncompatibleError) as refused:
        runtime.load("kiln-ik", "iiwa14", model_fingerprint=other)
    assert refused.value.reasons[0]["field"] == "robot_model"
    assert models[0]["fingerprint"] in refused.value.reasons[0]["recorded"]
    assert refused.value.reasons[0]["current"] == other


def random_q(ik, count, seed=7):
    joints = ik.joints()
    lower = np.array([j["lower"] for j in joints])
    upper = np.array([j["upper"] for j in joints])
    rng = np.random.default_rng(seed)
    # Inside the limits with a margin, away from where the solver must push against them.
    return (lower + (upper - lower) * rng.uniform(0.1, 0.9, size=(count, len(joints)))).astype(np.float32)


def test_chain(module, ik):
    assert "kiln.ik/1" in module.interfaces
    assert ik.dof == 7
    info = ik.info()
    assert (info["base_link"], info["tip_link"], info["source"]) == ("lbr_iiwa_link_0", "lbr_iiwa_link_7", "iiwa14.urdf")
    assert info["active"] is False and info["max_batch"] == 0
    joints = ik.joints()
    assert [j["name"] for j in joints] == [f"lbr_iiwa_joint_{i}" for i in range(1, 8)]
    assert all(j["type"] == "revolute" and j["lower"] < 0 < j["upper"] for j in joints)


def test_fk_known_values(ik):
    pose = ik.fk(np.zeros(7, np.float32))
    assert pose.shape == (7,) and pose.dtype == np.float32
    np.testing.assert_allclose(pose, [0, 0, 1.261, 1, 0, 0, 0], atol=1e-5)
    # Joint 2 (about y at 0.36 m) by pi/2 lays the rest of the arm (0.901 m) along x.
    q = np.zeros((1, 7), np.float32)
    q[0, 1] = np.pi / 2
    pose = ik.fk(q)
    assert pose.shape == (1, 7)
    np.testing.assert_allclose(np.abs(pose[0, :3]), [0.901, 0, 0.36], atol=1e-4)


def test_fk_batch_no_copy_and_out(ik):
    q = random_q(ik, 16)
    poses = ik.fk(q)
    assert poses.shape == (16, 7)
    for i in (0, 5, 15):
        np.testing.assert_array_equal(ik.fk(q[i]), poses[i])
    out = np.empty((16, 7), np.float32)
    assert ik.fk(q, out=out) is out
    np.testing.assert_array_equal(out, poses)
    np.testing.assert_allclose(ik.fk(q.astype(np.float64)), poses)  # converted once (forcecast)
    np.testing.assert_allclose(ik.fk(np.asfortranarray(q)), poses)  # made C-contiguous
    with pytest.raises(ValueError, match=r"\(n, 7\)"):
        ik.fk(np.zeros((3, 6), np.float32))


def test_solve_before_activate_is_refused(ik):
    with pytest.raises(kiln.UsageError, match="KILN_ERR_STATE"):
        ik.solve(np.array([[0, 0, 1.261, 1, 0, 0, 0]], np.float32))


def test_solve_host_only_reaches_the_targets(ik):
    ik.activate(-1, 64)
    assert ik.active and ik.info()["device"] == -1 and ik.info()["max_batch"] == 64
    truth = random_q(ik, 48)
    targets = ik.fk(truth)
    result = ik.solve(targets, random_seed=1)
    assert len(result) == 48 and result.q.shape == (48, 7) and result.q.dtype == np.float32
    assert result.converged.dtype == np.bool_ and result.iterations.dtype == np.uint32
    assert result.converged.all(), result
    assert (result.position_error < 1e-4).all() and (result.orientation_error < 1e-3).all()
    # Check the answer with the plugin's FK, independently of its own error report.
    reached = ik.fk(result.q)
    assert np.abs(reached[:, :3] - targets[:, :3]).max() < 2e-4
    dots = np.abs(np.sum(reached[:, 3:] * targets[:, 3:], axis=1))
    assert (dots > 1 - 1e-5).all()
    lower = np.array([j["lower"] for j in ik.joints()], np.float32)
    upper = np.array([j["upper"] for j in ik.joints()], np.float32)
    assert ((result.q >= lower) & (result.q <= upper)).all()


def test_solve_out_reuses_the_arrays_and_warm_start(ik):
    ik.activate(-1, 8)
    targets = ik.fk(random_q(ik, 8, seed=3))
    first = ik.solve(targets)
    q_before = first.q
    again = ik.solve(targets, out=first, warm_start=True)
    assert again.q is q_before or np.shares_memory(again.q, q_before)
    assert again.converged.all()
    # Warm-started from the slot's last solution: converged at once.
    assert (again.iterations <= first.iterations).all()
    seeded = ik.solve(targets, initial_q=again.q.copy(), seeds=1, max_iterations=4)
    assert seeded.converged.all()


def test_solve_refusals(ik):
    ik.activate(-1, 4)
    targets = ik.fk(random_q(ik, 5))
    with pytest.raises(kiln.UsageError, match="KILN_ERR_CAPACITY"):
        ik.solve(targets)
    with pytest.raises(ValueError, match="initial_q"):
        ik.solve(targets[:2], initial_q=np.zeros((3, 7), np.float32))
    bad = targets[:1].copy()
    bad[0, 3:] = 0  # a zero quaternion
    with pytest.raises(kiln.UsageError, match="KILN_ERR_INVALID_ARGUMENT"):
        ik.solve(bad)
    with pytest.raises(kiln.UsageError, match="KILN_ERR_INVALID_ARGUMENT"):
        ik.solve(targets[:1], seeds=1000)
    ik.close()
    with pytest.raises(kiln.UsageError, match="closed"):
        ik.solve(targets[:1])


def test_threads_share_one_instance(ik):
    ik.activate(-1, 16)
    targets = ik.fk(random_q(ik, 16, seed=11))
    results, errors = [], []

    def solve():
        try:
            for _ in range(3):
                results.append(ik.solve(targets, random_seed=5))
        except Exception as error:  # noqa: BLE001 -- reported below
            errors.append(error)

    threads = [threading.Thread(target=solve) for _ in range(3)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert not errors and len(results) == 9
    for result in results:
        np.testing.assert_array_equal(result.q, results[0].q)  # serialised: same answer every time


def test_two_instances_of_one_module(module):
    a, b = module.ik(), kiln.IK(module)
    a.activate(-1, 2)
    assert a.active and not b.active
    target = a.fk(np.zeros(7, np.float32))
    assert a.solve(target).converged.all()
