"""kiln's typed errors as Python exceptions: classes, exit codes, what each refusal raises."""

import pytest

import kiln

EXIT_CODES = {
    kiln.Error: 1,
    kiln.IoError: 1,
    kiln.UsageError: 2,
    kiln.NotFoundError: 3,
    kiln.ToolchainMissingError: 3,
    kiln.IncompatibleError: 4,
    kiln.AbiError: 5,
    kiln.IntegrityError: 6,
    kiln.BuildError: 7,
}


def test_classes_and_exit_codes_match_the_cli():
    for cls, code in EXIT_CODES.items():
        assert issubclass(cls, kiln.Error) and issubclass(cls, Exception)
        assert cls.exit_code == code, cls
        assert cls.__module__ == "kiln"
    assert issubclass(kiln.ToolchainMissingError, kiln.NotFoundError)
    assert kiln.UsageError.kind == "usage" and kiln.BuildError.kind == "build"


def test_missing_consumer_is_not_found(runtime, store):
    for call in (lambda: runtime.resolve("no-such-consumer", "iiwa14"),
                 lambda: runtime.load("no-such-consumer", "iiwa14")):
        with pytest.raises(kiln.NotFoundError) as raised:
            call()
        assert raised.value.exit_code == 3 and raised.value.kind == "not_found"
        assert "no-such-consumer" in str(raised.value)
        assert str(store) in str(raised.value)  # names where it looked
        assert raised.value.reasons == []


@pytest.mark.parametrize("consumer,name", [("../evil", "x"), ("ok", "a/b"), ("", "x"), ("ok", "x" * 65),
                                           ("ok", "-dash"), ("ok", "dot."), ("ok", "caf\u00e9")])
def test_bad_names_are_usage_errors(runtime, consumer, name):
    with pytest.raises(kiln.UsageError) as raised:
        runtime.resolve(consumer, name)
    assert raised.value.exit_code == 2
    with pytest.raises(kiln.UsageError):
        runtime.load(consumer, name)


def test_bad_declared_device_is_a_usage_error(monkeypatch):
    with pytest.raises(kiln.UsageError, match="sm_9x"):
        kiln.Runtime(device="sm_9x")
    monkeypatch.setenv("KILN_DEVICE", "gpu0")
    with pytest.raises(kiln.UsageError, match="gpu0"):
        kiln.Runtime()


@pytest.mark.parametrize("recipe,match", [
    ({"schema": 1}, '"consumer" is missing'),
    ({"schema": 1, "consumer": "example", "name": "x", "sources": ["plugin.cpp"], "artifact": "l.so",
      "bogus": 1}, '"bogus" is not a recipe field'),
    ({"schema": 1, "consumer": "example", "name": "x", "sources": "plugin.cpp", "artifact": "l.so"}, "sources"),
    ({"schema": 1, "consumer": "../x", "name": "x", "sources": ["plugin.cpp"], "artifact": "l.so"}, "consumer"),
    ({"schema": 1, "consumer": "example", "sources": {"a", "b"}}, "not JSON-serializable"),
])
def test_malformed_recipe_dict_is_a_usage_error(runtime, recipe_dir, recipe, match):
    for call in (lambda: runtime.plan(recipe, base_dir=recipe_dir),
                 lambda: runtime.build(recipe, base_dir=recipe_dir),
                 lambda: kiln.Recipe.from_dict(recipe, recipe_dir)):
        with pytest.raises(kiln.UsageError, match=match) as raised:
            call()
        assert raised.value.exit_code == 2
        assert "recipe dict" in str(raised.value)


def test_recipe_dict_naming_a_missing_source_is_not_found(runtime, tmp_path):
    recipe = {"schema": 1, "consumer": "example", "name": "x", "sources": ["absent.cpp"], "artifact": "l.so"}
    with pytest.raises(kiln.NotFoundError, match="absent.cpp"):
        runtime.plan(recipe, base_dir=tmp_path)


def test_recipe_argument_types(runtime, tmp_path):
    with pytest.raises(kiln.NotFoundError, match="nothing.json"):
        runtime.plan(tmp_path / "nothing.json")  # os.PathLike
    with pytest.raises(kiln.UsageError, match="expected a kiln.Recipe, a path or a dict"):
        runtime.plan(42)


def test_publish_refusals(runtime, tmp_path):
    with pytest.raises(kiln.NotFoundError) as raised:
        runtime.publish("tests", "x", tmp_path / "absent.so")
    assert raised.value.exit_code == 3
    text_file = tmp_path / "not-a-plugin.so"
    text_file.write_text("hello\n")
    with pytest.raises(kiln.AbiError, match="ELF") as raised:
        runtime.publish("tests", "x", text_file)
    assert raised.value.exit_code == 5
    with pytest.raises(kiln.UsageError, match="sm_9x"):
        runtime.publish("tests", "x", text_file, archs="sm_9x")
