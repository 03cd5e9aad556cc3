"""publish, list, resolve and load of a host-only plugin; doctor, devices and stores."""

import ctypes
import json
import os
import subprocess

import pytest

import kiln


class ExampleV1(ctypes.Structure):
    """kiln_example_v1 (abi/kiln/ext/example.h)."""
    _fields_ = [
        ("struct_size", ctypes.c_uint32),
        ("host_fma", ctypes.CFUNCTYPE(ctypes.c_double, ctypes.c_void_p, ctypes.c_double, ctypes.c_double,
                                      ctypes.c_double)),
    ]


def test_stores_devices_doctor(runtime, store):
    stores = runtime.stores()
    assert stores[-1] == {"root": str(store), "writable": True, "origin": "KILN_CACHE_DIR"}
    devices = runtime.devices()
    assert devices["declared"]["arch"] == "sm_90" and devices["declared"]["declared"] is True
    assert devices["effective"] == [devices["declared"]]
    doctor = runtime.doctor()
    assert doctor["version"] == kiln.__version__
    assert doctor["abi_version"] == kiln.ABI_VERSION
    assert doctor["stores"] == stores and doctor["devices"] == devices
    assert set(doctor["toolchain"]) >= {"nvcc", "host_compiler", "cmake", "nvrtc"}


def test_options_override_the_environment(tmp_path):
    layer = tmp_path / "layer"
    layer.mkdir()
    runtime = kiln.Runtime(cache_dir=tmp_path / "other", store_path=[layer], device="sm_87")
    assert [s["root"] for s in runtime.stores()] == [str(layer), str(tmp_path / "other")]
    assert runtime.stores()[0]["writable"] is False
    assert runtime.devices()["effective"][0]["arch"] == "sm_87"


def test_publish_list_resolve_load(runtime, store, host_plugin):
    published = runtime.publish("tests", "fma", host_plugin, provenance={"built_by": "pytest"})
    assert len(published["content_key"]) == 32 and not published["reused"]
    assert published["entry"].startswith(str(store))
    assert runtime.publish("tests", "fma", host_plugin)["reused"] is True

    listed = runtime.list("tests")
    assert [(a["consumer"], a["name"], a["content_key"]) for a in listed] == [
        ("tests", "fma", published["content_key"])]
    assert listed[0]["kind"] == "plugin" and listed[0]["store_writable"] and not listed[0]["shadowed"]
    assert any(a["name"] == "fma" for a in runtime.list())

    resolution = runtime.resolve("tests", "fma")
    assert resolution["content_key"] == published["content_key"]
    assert resolution["file"] == published["file"] and os.path.isfile(resolution["file"])
    assert resolution["kind"] == "plugin" and resolution["identity"]["archs"] == []
    assert resolution["identity"]["provenance"]["built_by"] == "pytest"

    module = runtime.load("tests", "fma")
    assert "kiln.example/1" in module.interfaces
    assert module.content_key == published["content_key"]
    report = module.report
    assert report["compatibility"]["ok"] is True
    assert report["device"]["arch"] == "sm_90"
    assert report["timings"]["total_ms"] > 0

    instance = module.create_instance()
    address = instance.interface_address("kiln.example/1", ctypes.sizeof(ExampleV1))
    assert address is not None and instance.interface_address("kiln.nothing/1") is None
    table = ExampleV1.from_address(address)
    assert table.host_fma(instance.handle, 2.0, 3.0, 4.0) == 10.0
    instance.activate(-1, 1)
    assert instance.active
    instance.deactivate()
    assert not instance.active

    again = runtime.load("tests", "fma", content_key=published["content_key"])
    assert again.content_key == published["content_key"]


def test_module_without_ik_refuses_ik(runtime, host_plugin):
    runtime.publish("tests", "fma", host_plugin)
    with pytest.raises(kiln.AbiError, match="offers no kiln.ik/1; it offers: kiln.example/1"):
        runtime.load("tests", "fma").ik()


def test_an_arch_the_file_does_not_hold_is_refused(runtime, host_plugin):
    with pytest.raises(kiln.IntegrityError, match="holds no device code for sm_87") as raised:
        runtime.publish("tests", "fma-sm87", host_plugin, archs=["sm_87"])
    assert raised.value.exit_code == 6


def test_wrong_arch_is_incompatible_with_reasons(ik_plugin):
    kiln.Runtime().publish("tests", "ik", ik_plugin)  # its archs: what the file holds
    with pytest.raises(kiln.IncompatibleError) as raised:
        kiln.Runtime(device="sm_87").load("tests", "ik")
    assert raised.value.exit_code == 4
    reasons = raised.value.reasons
    assert reasons and all(set(r) == {"field", "recorded", "current", "note"} for r in reasons)
    assert any("sm_90" in r["recorded"] and "sm_87" in r["current"] for r in reasons), reasons


def test_cli_sees_what_python_published(runtime, store, host_plugin, cli):
    published = runtime.publish("tests", "fma", host_plugin)
    listed = json.loads(subprocess.run([cli, "ls", "tests", "--json"], check=True, capture_output=True,
                                       text=True, env=os.environ).stdout)
    text = json.dumps(listed)
    assert published["content_key"] in text and '"fma"' in text
    missing = subprocess.run([cli, "load", "no-such-consumer", "x"], capture_output=True, env=os.environ)
    assert missing.returncode == kiln.NotFoundError.exit_code
