"""kiln.TrajOpt on a real TrajOpt plugin (iiwa14, N = 64), host only: activate(-1), no GPU needed."""

import numpy as np
import pytest

import kiln
from conftest import PLUGIN_ARCHS


@pytest.fixture
def trajopt(runtime, trajopt_plugin):
    runtime.publish("kiln-trajopt", "iiwa14-N64", trajopt_plugin, archs=PLUGIN_ARCHS)
    with runtime.load("kiln-trajopt", "iiwa14-N64").trajopt() as solver:
        yield solver


def start_and_goal(trajopt, count):
    joints = trajopt.joints()
    lower = np.array([j["lower"] for j in joints])
    upper = np.array([j["upper"] for j in joints])
    rng = np.random.default_rng(5)
    q0 = lower + (upper - lower) * rng.uniform(0.35, 0.65, size=(count, len(joints)))
    goal = q0 + rng.uniform(-0.3, 0.3, size=q0.shape)
    return q0.astype(np.float32), goal.astype(np.float32)


def test_chain(trajopt):
    info = trajopt.info()
    assert trajopt.dof == 7 and trajopt.horizon == info["horizon"] == 64
    assert info["tip_link"] == "lbr_iiwa_link_7" and info["warm_start"] is True
    joints = trajopt.joints()
    assert [j["name"] for j in joints] == [f"lbr_iiwa_joint_{i}" for i in range(1, 8)]
    assert all(j["velocity_limit"] > 0 and j["effort_limit"] > 0 for j in joints)


def test_joint_goals_host_only(trajopt):
    trajopt.activate(-1, 4)
    q0, goal = start_and_goal(trajopt, 3)
    result = trajopt.solve(q0, joint_goals=goal, dt=0.02)
    assert len(result) == 3 and result.q.shape == (3, 65, 7) and result.torques.shape == (3, 65, 7)
    assert result.converged.all(), (result.position_error, result.cost)
    np.testing.assert_allclose(result.q[:, 0], q0, atol=1e-6)      # knot 0 is the start
    assert np.abs(result.q[:, -1] - goal).max() <= 1e-3 + 1e-6    # the default tolerance
    np.testing.assert_array_equal(result.orientation_error, 0)
    assert (result.velocity_violation <= 0).all() and (result.torque_violation <= 0).all()
    # qd are the interface's finite differences of q.
    np.testing.assert_allclose(result.qd[:, 1:], np.diff(result.q, axis=1) / 0.02, atol=2e-3)
    again = trajopt.solve(q0, joint_goals=goal, dt=np.full(3, 0.02, np.float32), out=result, warm_start=True)
    assert np.shares_memory(again.q, result.q) and again.converged.all()
    assert (again.iterations <= result.iterations).all()


def test_refusals(trajopt):
    q0, goal = start_and_goal(trajopt, 2)
    with pytest.raises(kiln.UsageError, match="KILN_ERR_STATE"):
        trajopt.solve(q0, joint_goals=goal)
    trajopt.activate(-1, 1)
    with pytest.raises(kiln.UsageError, match="KILN_ERR_CAPACITY"):
        trajopt.solve(q0, joint_goals=goal)
    with pytest.raises(ValueError, match="give pose_goals, joint_goals"):
        trajopt.solve(q0[:1])
    with pytest.raises(ValueError, match="goal_kinds"):
        trajopt.solve(q0[:1], joint_goals=goal[:1], pose_goals=np.zeros((1, 7), np.float32))
    with pytest.raises(kiln.UsageError, match="KILN_ERR_INVALID_ARGUMENT"):
        trajopt.solve(q0[:1], joint_goals=goal[:1], dt=-1.0)
