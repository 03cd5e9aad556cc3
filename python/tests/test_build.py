"""plan / build / ensure of the host-only example recipe (nvcc), from a dict and from a file."""

import json
import os
import signal
import threading
import time

import pytest

import kiln
from conftest import example_recipe

pytestmark = pytest.mark.usefixtures("nvcc")


def test_plan_build_hit_ensure(runtime, store, recipe_dir):
    recipe = example_recipe()
    plan = runtime.plan(recipe, base_dir=recipe_dir)
    assert plan["state"] == "missing" and plan["content_key"] is None
    assert plan["backend"] == "nvcc" and plan["archs"] == ["sm_90"]
    assert plan["nvcc_version"] and plan["steps"]

    events = []
    built = runtime.build(recipe, base_dir=recipe_dir, progress=events.append)
    assert built["outcome"] == "built" and built["input_key"] == plan["input_key"]
    assert len(built["content_key"]) == 32 and built["entry"].startswith(str(store))
    assert [u["name"] for u in built["units"]] == ["plugin.cpp"]
    kinds = [e["kind"] for e in events]
    assert kinds[0] == "units_queued" and "unit_finished" in kinds and "link_finished" in kinds

    assert runtime.plan(recipe, base_dir=recipe_dir)["state"] == "cached"
    assert runtime.build(recipe, base_dir=recipe_dir)["outcome"] == "hit"
    assert runtime.list("example")[0]["content_key"] == built["content_key"]

    module = runtime.ensure(recipe, base_dir=recipe_dir)
    assert "kiln.example/1" in module.interfaces and module.content_key == built["content_key"]


def test_file_recipe_and_dict_recipe_key_alike(runtime, recipe_dir):
    recipe = example_recipe()
    path = recipe_dir / "fma.json"
    path.write_text(json.dumps(recipe))
    from_file = kiln.Recipe.load(path)
    assert (from_file.consumer, from_file.name, from_file.backend) == ("example", "fma-built", "nvcc")
    assert from_file.file == str(path) and from_file.base_dir == str(recipe_dir)
    from_dict = kiln.Recipe.from_dict(recipe, base_dir=recipe_dir)
    assert from_dict.canonical_json() == from_file.canonical_json()
    keys = {runtime.plan(r, base_dir=recipe_dir)["input_key"] for r in (path, str(path), from_file, from_dict, recipe)}
    assert len(keys) == 1


def test_dict_recipe_paths_default_to_the_current_directory(runtime, recipe_dir, monkeypatch):
    monkeypatch.chdir(recipe_dir)
    assert runtime.plan(example_recipe())["state"] == "missing"


def test_archs_override_and_stale(runtime, recipe_dir):
    recipe = example_recipe()
    runtime.build(recipe, base_dir=recipe_dir)
    assert sorted(runtime.plan(recipe, base_dir=recipe_dir, archs="sm_90,sm_87")["archs"]) == ["sm_87", "sm_90"]
    changed = dict(recipe, defines=["KILN_PY_TEST=1"])
    plan = runtime.plan(changed, base_dir=recipe_dir)
    assert plan["state"] == "stale"
    assert any("define" in r["field"] or "recipe" in r["field"] for r in plan["stale_reasons"]), plan["stale_reasons"]


def test_compile_error_is_a_build_error_with_log(runtime, store, recipe_dir):
    (recipe_dir / "broken.cpp").write_text("this is not C++;\n")
    recipe = dict(example_recipe("broken"), sources=["broken.cpp"])
    with pytest.raises(kiln.BuildError) as raised:
        runtime.build(recipe, base_dir=recipe_dir)
    assert raised.value.exit_code == 7
    assert "broken.cpp" in raised.value.log and "error" in raised.value.log
    with pytest.raises(kiln.NotFoundError):
        runtime.resolve("example", "broken")  # nothing published


def test_progress_callback_exception_stops_the_build(runtime, recipe_dir):
    def progress(event):
        raise ZeroDivisionError("from the progress callback")

    with pytest.raises(ZeroDivisionError, match="from the progress callback"):
        runtime.build(example_recipe(), base_dir=recipe_dir, progress=progress)
    with pytest.raises(kiln.NotFoundError):
        runtime.resolve("example", "fma-built")


def test_ctrl_c_cancels_the_build(runtime, store, recipe_dir):
    # A generator step that takes 20 s (the compile alone is too quick to interrupt reliably);
    # SIGINT arrives while it runs: the build is cancelled, its process group killed at once.
    recipe = dict(example_recipe("slow"), generators=[{
        "name": "slow", "tool": "/bin/sh", "command": ["{tool}", "-c", "sleep 20 && : > {gen}/slow.h"],
        "inputs": [], "outputs": ["slow.h"]}])
    # Python raises KeyboardInterrupt only where SIGINT has its default handler, which it does not
    # install when started with SIGINT ignored (a background job of a non-interactive shell).
    previous = signal.signal(signal.SIGINT, signal.default_int_handler)
    timer = threading.Timer(0.5, os.kill, (os.getpid(), signal.SIGINT))
    started = time.monotonic()
    timer.start()
    try:
        with pytest.raises(KeyboardInterrupt):
            runtime.build(recipe, base_dir=recipe_dir)
    finally:
        timer.cancel()
        signal.signal(signal.SIGINT, previous)
    assert time.monotonic() - started < 10
    assert runtime.plan(recipe, base_dir=recipe_dir)["state"] == "missing"
    entries = store / "consumers" / "example" / "store"
    leftovers = [p.name for p in entries.iterdir()] if entries.exists() else []
    assert not [name for name in leftovers if name.startswith(".staging")], leftovers


def test_log_callback_receives_messages(recipe_dir):
    lines = []
    runtime = kiln.Runtime(log=lambda level, message: lines.append((level, message)))
    runtime.build(example_recipe(), base_dir=recipe_dir)
    assert lines and all(level in ("debug", "info", "warning", "error") for level, _ in lines)
