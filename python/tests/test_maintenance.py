"""Store maintenance and bundles from Python: verify, gc, export_bundle, import_bundle and
generate_keypair, each checked against what the store holds afterwards and, where it says the
same, against the kiln CLI's --json."""

import json
import os
import pathlib
import subprocess

import pytest

import kiln


def test_verify_finds_damage_and_repairs_it(runtime, store, host_plugin):
    published = runtime.publish("tests", "fma", host_plugin)
    clean = runtime.verify()
    assert clean["clean"] is True and clean["damage_left"] == 0 and clean["entries"] == 1
    assert clean["stores"][-1] == str(store) and clean["bytes"] >= os.path.getsize(published["file"])

    # One byte of the artifact changed: its digest no longer matches.
    artifact = pathlib.Path(published["file"])
    data = bytearray(artifact.read_bytes())
    data[-1] ^= 0xFF
    artifact.chmod(0o644)
    artifact.write_bytes(bytes(data))
    damaged = runtime.verify()
    assert damaged["damage_left"] == 1 and not damaged["clean"]
    finding = next(f for f in damaged["findings"] if f["severity"] == "damage")
    assert finding["kind"] == "damaged_entry" and published["content_key"] in finding["path"]
    assert finding["repaired"] is False

    repaired = runtime.verify(repair=True)
    assert repaired["damage_left"] == 0 and repaired["repaired"] >= 1
    assert not pathlib.Path(published["entry"]).exists()  # moved aside, not lost
    with pytest.raises(kiln.NotFoundError):
        kiln.Runtime().load("tests", "fma")


def test_gc_dry_run_then_evicts_unnamed_entries(runtime, host_plugin, tmp_path):
    first = runtime.publish("tests", "fma", host_plugin)
    # Republishing the name with other bytes leaves the first entry unnamed.
    other = tmp_path / "other.so"
    data = bytearray(pathlib.Path(host_plugin).read_bytes())
    other.write_bytes(bytes(data) + b"\0" * 16)
    other.chmod(0o755)
    second = runtime.publish("tests", "fma", other)
    assert second["content_key"] != first["content_key"]

    with pytest.raises(kiln.UsageError):
        runtime.gc()  # no limit
    planned = runtime.gc(max_size=0, dry_run=True)
    assert planned["dry_run"] is True and planned["entries_evicted"] == 1
    assert pathlib.Path(first["entry"]).exists()
    done = runtime.gc(max_size="0")
    assert done["dry_run"] is False and done["entries_evicted"] == 1
    assert [i["content_key"] for i in done["items"] if i["outcome"] == "evicted"] == [first["content_key"]]
    assert not pathlib.Path(first["entry"]).exists() and pathlib.Path(second["entry"]).exists()
    assert kiln.Runtime().resolve("tests", "fma")["content_key"] == second["content_key"]


def test_signed_bundle_into_a_read_only_layer(runtime, host_plugin, tmp_path):
    published = runtime.publish("tests", "fma", host_plugin)
    keys = kiln.generate_keypair(tmp_path / "vendor")
    assert len(keys["key_id"]) == 16 and (os.stat(keys["secret_file"]).st_mode & 0o777) == 0o600
    with pytest.raises(kiln.UsageError):
        kiln.generate_keypair(tmp_path / "vendor")  # never overwritten

    exported = runtime.export_bundle("tests", tmp_path / "ik.kbundle", ["fma"], sign=keys["secret_file"])
    assert exported["signed_by"] == keys["key_id"] and exported["bundle_bytes"] == os.path.getsize(exported["bundle"])
    assert [(e["name"], e["content_key"]) for e in exported["entries"]] == [("fma", published["content_key"])]

    layer = tmp_path / "robot-layer"
    with pytest.raises(kiln.UsageError, match="signed by key " + keys["key_id"]):
        runtime.import_bundle(exported["bundle"], into=layer)  # signed, but no key trusted
    other = kiln.generate_keypair(tmp_path / "stranger")
    with pytest.raises(kiln.IntegrityError):
        runtime.import_bundle(exported["bundle"], into=layer, trust=[other["public_file"]])
    assert not (layer / "consumers" / "tests" / "manifest.json").exists()  # all or nothing
    imported = runtime.import_bundle(exported["bundle"], into=layer, trust=keys["public_file"])
    assert imported["signature_verified"] is True and imported["signed_by"] == keys["key_id"]
    assert imported["store_root"] == str(layer.resolve())

    robot = kiln.Runtime(cache_dir=tmp_path / "robot-cache", store_path=[layer])
    resolution = robot.resolve("tests", "fma")
    assert resolution["content_key"] == published["content_key"] and resolution["store_writable"] is False
    module = robot.load("tests", "fma")
    assert "kiln.example/1" in module.interfaces and module.content_key == published["content_key"]


def test_reports_match_the_cli(runtime, store, host_plugin, tmp_path):
    cli = os.environ.get("KILN_TEST_CLI")
    if not cli:
        pytest.skip("KILN_TEST_CLI is not set: no kiln CLI to compare with")
    runtime.publish("tests", "fma", host_plugin)

    def cli_json(*args):
        return json.loads(subprocess.run([cli, *args, "--json"], check=True, capture_output=True, text=True).stdout)

    ours, theirs = runtime.verify(), cli_json("verify")
    for report in (ours, theirs):
        report.pop("seconds")
    assert ours == theirs
    ours, theirs = runtime.gc(max_size="1G", dry_run=True), cli_json("gc", "--max-size", "1G", "--dry-run")
    for report in (ours, theirs):
        report.pop("seconds")
    assert ours == theirs


def test_key_list_judges_the_signer_of_a_bundle(runtime, host_plugin, tmp_path):
    runtime.publish("tests", "fma", host_plugin)
    root = kiln.generate_keypair(tmp_path / "root")
    release = kiln.generate_keypair(tmp_path / "release")
    builder = kiln.generate_keypair(tmp_path / "builder")
    keys = tmp_path / "fleet-keys.json"
    assert kiln.key_list_init(keys, root=root["secret_file"])["generation"] == 1
    listed = kiln.key_list_add(keys, root=root["secret_file"], key=release["public_file"], roles=["release"])
    listed = kiln.key_list_add(keys, root=root["secret_file"], key=builder["public_file"], roles=["build"], consumers=["tests"])
    assert listed["generation"] == 3 and [k["key_id"] for k in listed["keys"]] == [release["key_id"], builder["key_id"]]
    assert kiln.read_key_list(keys) == listed

    layer = tmp_path / "robot-layer"
    status = runtime.trust(root=root["public_file"], into=layer)
    assert status["root"]["key_id"] == root["key_id"] and status["key_list"] is None

    # A build key may not sign a release; the list travels with the bundle and the store keeps it.
    by_builder = runtime.export_bundle("tests", tmp_path / "b.kbundle", sign=builder["secret_file"])
    with pytest.raises(kiln.IntegrityError, match="holds no key list"):
        runtime.import_bundle(by_builder["bundle"], into=layer)
    with pytest.raises(kiln.UsageError, match="may sign for build, not release"):
        runtime.export_bundle("tests", tmp_path / "b2.kbundle", sign=builder["secret_file"], key_list=keys)
    good = runtime.export_bundle("tests", tmp_path / "r.kbundle", sign=release["secret_file"], key_list=keys)
    assert good["key_list_generation"] == 3
    imported = runtime.import_bundle(good["bundle"], into=layer)
    assert imported["signed_by"] == release["key_id"] and imported["key_list_generation"] == 3
    with pytest.raises(kiln.IntegrityError, match="may sign for build, not release"):
        runtime.import_bundle(by_builder["bundle"], into=layer)

    # Revoked for everything: the same bundle is refused from then on.
    kiln.key_list_revoke(keys, root=root["secret_file"], key_id=release["key_id"], all=True, reason="stolen")
    assert runtime.trust(key_list=keys, into=layer)["key_list"]["generation"] == 4
    with pytest.raises(kiln.IntegrityError, match="stolen"):
        runtime.import_bundle(good["bundle"], into=layer)

    # The robot pinned to the first root follows a rotation.
    root2 = kiln.generate_keypair(tmp_path / "root2")
    rotated = kiln.key_list_rotate_root(keys, root=root["secret_file"], new_root=root2["secret_file"])
    assert rotated["roots"] == [root["key_id"], root2["key_id"]]
    robot = kiln.Runtime(cache_dir=tmp_path / "robot-cache", store_path=[layer])
    assert robot.trust_status()["key_list"]["generation"] == 4  # the layer's, read-only
    assert robot.trust(key_list=keys)["key_list"]["generation"] == 5  # kept in the robot's own cache
