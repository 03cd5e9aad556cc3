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


def minimum_jerk(q0, goal, horizon):
    """Knots 1..N of a minimum-jerk motion from q0 to goal: (n, N, dof)."""
    t = np.arange(1, horizon + 1, dtype=np.float64) / horizon
    s = t**3 * (10 + t * (-15 + 6 * t))
    return (q0[:, None, :] + (goal - q0)[:, None, :] * s[None, :, None]).astype(np.float32)


def tip_poses(ik, joints):
    """The plugin family's own FK (kiln.IK.fk) of (n, N, dof) joint vectors: (n, N, 7)."""
    n, horizon, dof = joints.shape
    return ik.fk(joints.reshape(-1, dof)).reshape(n, horizon, 7).astype(np.float32)


def test_info_reports_tracking(trajopt):
    info = trajopt.info()
    assert info["tracking"] is True and info["within_limits"] is True


def test_tracking_and_the_next_tick(trajopt, runtime, ik_plugin):
    trajopt.activate(-1, 2)
    runtime.publish("kiln-ik", "iiwa14", ik_plugin, archs=PLUGIN_ARCHS)
    with runtime.load("kiln-ik", "iiwa14").ik() as ik:
        q0, goal = start_and_goal(trajopt, 2)
        reference = tip_poses(ik, minimum_jerk(q0, goal, trajopt.horizon))
        first = trajopt.solve(q0, track_poses=reference, dt=0.02, seeds=1)
        assert first.converged.all() and first.within_limits.all(), first.position_error
        assert first.position_error.max() < 2e-3  # every knot within 2 mm of its reference
        reached = tip_poses(ik, first.q[:, 1:])
        assert np.linalg.norm(reached[..., :3] - reference[..., :3], axis=-1).max() < 2e-3
        # The next tick: start at knot 1, the reference one knot on (the last held), from the last plan.
        nxt = np.concatenate([reference[:, 1:], reference[:, -1:]], axis=1)
        qd1 = (first.q[:, 1] - first.q[:, 0]) / 0.02
        shifted = trajopt.solve(first.q[:, 1].copy(), qd0=qd1, track_poses=nxt, dt=0.02, seeds=1, warm_shift=True)
        cold = trajopt.solve(first.q[:, 1].copy(), qd0=qd1, track_poses=nxt, dt=0.02, seeds=1)
        assert shifted.converged.all() and shifted.within_limits.all()
        assert shifted.iterations.sum() < cold.iterations.sum(), (shifted.iterations, cold.iterations)


def test_out_of_reach_within_limits(trajopt):
    trajopt.activate(-1, 1)
    q0, _ = start_and_goal(trajopt, 1)
    far = np.array([[3.0, 0.0, 0.5, 1.0, 0.0, 0.0, 0.0]], np.float32)  # 3 m out: the arm reaches 1.3 m
    result = trajopt.solve(q0, pose_goals=far, max_iterations=20)
    assert not result.converged[0] and result.within_limits[0]
    assert result.position_error[0] > 1.0
    assert result.velocity_violation[0] <= 0 and result.torque_violation[0] <= 0


def test_tracking_refusals(trajopt):
    trajopt.activate(-1, 1)
    q0, goal = start_and_goal(trajopt, 1)
    poses = np.zeros((1, trajopt.horizon, 7), np.float32)
    poses[..., 3] = 1.0
    with pytest.raises(ValueError, match="track_poses: expected"):
        trajopt.solve(q0, track_poses=poses[:, :10])
    with pytest.raises(ValueError, match="track_weights without track_poses"):
        trajopt.solve(q0, joint_goals=goal, track_weights=np.ones((1, trajopt.horizon, 2), np.float32))
    with pytest.raises(ValueError, match="goal_kinds"):
        trajopt.solve(q0, joint_goals=goal, track_poses=poses)
    poses[0, 4, 3:] = 0.0  # a zero quaternion at knot 5
    with pytest.raises(kiln.UsageError, match="knot 5 has a zero quaternion"):
        trajopt.solve(q0, track_poses=poses)
