"""GPU placement from Python: kiln.GpuPartition and activate's partition and stream_priority.

Where the placement runs (a partition's SMs, a stream's priority) is the C++ gpu suite's; here is
what is refused before any GPU work, on every machine."""

import pytest

import kiln
from conftest import PLUGIN_ARCHS


def test_a_share_of_no_sms_is_refused():
    with pytest.raises(kiln.UsageError, match="reserves nothing"):
        kiln.GpuPartition.split(0)
    with pytest.raises(kiln.UsageError, match=r"fraction in \(0, 1\)"):
        kiln.GpuPartition.split(0, fraction=1.0)


def test_without_a_device_a_partition_is_refused(runtime):
    if runtime.devices()["state"] == "ok":
        pytest.skip("a CUDA driver is present: the no-device refusal cannot be reached here")
    with pytest.raises(kiln.Error, match="no CUDA device to partition"):
        kiln.GpuPartition.split(0, sm_count=16)


def test_a_host_only_activate_is_refused_a_placement(runtime, host_plugin):
    runtime.publish("tests", "fma", host_plugin, archs="none")
    instance = runtime.load("tests", "fma").create_instance()
    with pytest.raises(kiln.UsageError, match=r"host-only activate \(device -1\)"):
        instance.activate(-1, 1, stream_priority=-1)
    assert not instance.active
    instance.activate(-1, 1, partition=None, stream_priority=0)
    assert instance.active
    with pytest.raises(kiln.ArgumentTypeError, match="partition"):
        instance.activate(-1, 1, partition=5)


def test_a_solver_takes_the_same_placement_arguments(runtime, ik_plugin):
    runtime.publish("kiln-ik", "iiwa14", ik_plugin, archs=PLUGIN_ARCHS)
    with runtime.load("kiln-ik", "iiwa14").ik() as ik:
        with pytest.raises(kiln.UsageError, match="stream priority -1"):
            ik.activate(-1, 8, stream_priority=-1)
        assert not ik.active
        ik.activate(-1, 8)
        assert ik.active
