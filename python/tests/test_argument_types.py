"""Every public call of the binding answers arguments of the wrong type, a missing argument, too
many or an unknown keyword with kiln.ArgumentTypeError (a TypeError) naming the call, the
parameter, what it expects and what it got -- never pybind11's "incompatible function arguments"
-- while TypeErrors raised inside a call pass through unchanged."""

import pytest

import kiln
from conftest import PLUGIN_ARCHS, example_recipe

PYBIND11_TEXT = ("incompatible function arguments", "incompatible constructor arguments", "Unable to cast",
                 "The following argument types are supported", "Invoked with")


def expect_argument_type_error(call, fragment):
    with pytest.raises(kiln.ArgumentTypeError) as raised:
        call()
    error = raised.value
    assert isinstance(error, TypeError) and isinstance(error, kiln.UsageError) and error.exit_code == 2
    text = str(error)
    assert fragment in text, text
    assert not any(bad in text for bad in PYBIND11_TEXT), text


# (call on a kiln.Runtime, the message's fragment): no plugin needed.
WITHOUT_PLUGINS = [
    (lambda rt: kiln.Runtime(cache_dir=5),
     "Runtime.__init__(): cache_dir: expected a path (str or os.PathLike), got int"),
    (lambda rt: kiln.Runtime(cach_dir="/tmp"),
     "Runtime.__init__(): unknown keyword argument 'cach_dir' (did you mean 'cache_dir'?); it takes: cache_dir, "
     "store_path, device, log"),
    (lambda rt: kiln.Runtime("/tmp"), "Runtime.__init__(): takes 0 positional argument(s) (none), got 1"),
    (lambda rt: rt.load(3, "x"), "Runtime.load(): consumer: expected str, got int"),
    (lambda rt: rt.load("c", "n", device="0"), "Runtime.load(): device: expected int, got str"),
    (lambda rt: rt.load("c", "n", content_key=5), "Runtime.load(): content_key: expected str or None, got int"),
    (lambda rt: rt.resolve("c"), "Runtime.resolve(): missing argument 'name' (str)"),
    (lambda rt: rt.resolve("c", "n", "x"), "Runtime.resolve(): takes 2 positional argument(s) (consumer, name), got 3"),
    (lambda rt: rt.list(5), "Runtime.list(): consumer: expected str, got int"),
    (lambda rt: rt.stores(1), "Runtime.stores(): takes 0 positional argument(s) (none), got 1"),
    (lambda rt: rt.gc(dry_run="yes"), "Runtime.gc(): dry_run: expected bool, got str"),
    (lambda rt: rt.gc(dryrun=True), "Runtime.gc(): unknown keyword argument 'dryrun' (did you mean 'dry_run'?)"),
    (lambda rt: rt.plan(example_recipe(), base_dir=5), "Runtime.plan(): base_dir: expected a path (str or os.PathLike), got int"),
    (lambda rt: rt.plan(42), "Runtime.plan(): recipe: expected a kiln.Recipe, a path or a dict, got int"),
    (lambda rt: rt.build(example_recipe(), jobs="2"), "Runtime.build(): jobs: expected int, got str"),
    (lambda rt: rt.ensure(example_recipe(), force="yes"), "Runtime.ensure(): force: expected bool, got str"),
    (lambda rt: rt.publish("c", "n", "/x.so", provenance={"by": 1}),
     "Runtime.publish(): provenance: expected a dict of str to str, got dict whose 'by' is int"),
    (lambda rt: rt.publish("c", "n", 5), "Runtime.publish(): artifact: expected a path (str or os.PathLike), got int"),
    (lambda rt: rt.export_bundle("c", 5), "Runtime.export_bundle(): output: expected a path (str or os.PathLike), got int"),
    (lambda rt: rt.export_bundle("c", "/x.kiln", names=["a", 2]),
     "Runtime.export_bundle(): names: expected a list of str, got list whose item 1 is int"),
    (lambda rt: rt.import_bundle(b"x", allow_unsigned="no"), "Runtime.import_bundle(): allow_unsigned: expected bool, got str"),
    (lambda rt: rt.verify(repair=[True]), "Runtime.verify(): repair: expected bool, got list"),
    (lambda rt: kiln.Recipe.load(5), "Recipe.load(): path: expected a path (str or os.PathLike), got int"),
    (lambda rt: kiln.Recipe.from_dict("recipe.json"), "Recipe.from_dict(): recipe: expected dict, got str"),
    (lambda rt: kiln.Recipe.from_dict(example_recipe()).canonical_json(2),
     "Recipe.canonical_json(): takes 0 positional argument(s) (none), got 1"),
    (lambda rt: kiln.generate_keypair(None), "generate_keypair(): path: expected a path (str or os.PathLike), got NoneType"),
    (lambda rt: kiln.generate_keypair(pth="/tmp/k"), "generate_keypair(): unknown keyword argument 'pth' (did you mean 'path'?)"),
    (lambda rt: kiln.IK(5), "IK.__init__(): module: expected kiln.Module, got int"),
    (lambda rt: kiln.TrajOpt(module="m"), "TrajOpt.__init__(): module: expected kiln.Module, got str"),
    (lambda rt: kiln.Module(), "Module(): a kiln.Module is not made directly"),
    (lambda rt: kiln.Instance(), "Instance(): a kiln.Instance is not made directly"),
    (lambda rt: kiln.IKResult(), "IKResult(): a kiln.IKResult is not made directly"),
    (lambda rt: kiln.TrajOptResult(), "TrajOptResult(): a kiln.TrajOptResult is not made directly"),
]


@pytest.mark.parametrize("call,fragment", WITHOUT_PLUGINS, ids=[f for _, f in WITHOUT_PLUGINS])
def test_wrong_arguments_are_named(runtime, recipe_dir, monkeypatch, call, fragment):
    monkeypatch.chdir(recipe_dir)  # a dict recipe's sources: from the current directory
    expect_argument_type_error(lambda: call(runtime), fragment)


def test_every_public_call_is_covered():
    """Each function, method and constructor of each public class goes through the one translation."""
    for name in kiln.__all__:
        value = getattr(kiln, name)
        if isinstance(value, type) and not issubclass(value, BaseException):
            for attribute, member in vars(value).items():
                function = member.__func__ if isinstance(member, staticmethod) else member
                if callable(function) and not isinstance(member, property):
                    assert hasattr(function, "__wrapped__"), f"kiln.{name}.{attribute} is not wrapped"
        elif callable(value) and not isinstance(value, type):
            assert hasattr(value, "__wrapped__"), f"kiln.{name} is not wrapped"
    # The signatures still read as the binding's own.
    assert kiln.Runtime.load.__doc__.startswith("load(self: kiln._kiln.Runtime, consumer: str, name: str")


class FailingPath:
    """A path whose __fspath__ fails with a TypeError of its own."""

    def __fspath__(self):
        raise TypeError("the path object's own failure")


def test_a_type_error_inside_a_call_passes_through_unchanged(runtime):
    for call in (lambda: kiln.Recipe.load(FailingPath()), lambda: runtime.publish("c", "n", FailingPath())):
        with pytest.raises(TypeError, match="^the path object's own failure$") as raised:
            call()
        assert type(raised.value) is TypeError


def test_other_kiln_errors_are_untouched(runtime):
    with pytest.raises(kiln.NotFoundError, match="^(?!Runtime)"):
        runtime.resolve("no-such-consumer", "x")


def test_with_a_plugin(runtime, host_plugin):
    runtime.publish("tests", "fma", host_plugin, archs="none")
    module = runtime.load("tests", "fma")
    expect_argument_type_error(lambda: module.create_instance(1), "Module.create_instance(): takes 0 positional")
    expect_argument_type_error(lambda: module.ik(device=0), "Module.ik(): unknown keyword argument 'device'")
    instance = module.create_instance()
    expect_argument_type_error(lambda: instance.activate(device="0"), "Instance.activate(): device: expected int, got str")
    expect_argument_type_error(lambda: instance.interface_address(5), "Instance.interface_address(): id: expected str, got int")
    expect_argument_type_error(lambda: instance.interface_address("kiln.example/1", min_sise=8),
                               "unknown keyword argument 'min_sise' (did you mean 'min_size'?)")


def test_ik(runtime, ik_plugin):
    np = pytest.importorskip("numpy")
    runtime.publish("kiln-ik", "iiwa14", ik_plugin, archs=PLUGIN_ARCHS)
    targets = np.tile(np.array([0.5, 0, 0.5, 1, 0, 0, 0], np.float32), (2, 1))
    with runtime.load("kiln-ik", "iiwa14").ik() as ik:
        expect_argument_type_error(lambda: ik.solve(targets, max_iterations="10"),
                                   "IK.solve(): max_iterations: expected int, got str")
        expect_argument_type_error(lambda: ik.solve(targets, damping=[1]), "IK.solve(): damping: expected float, got list")
        expect_argument_type_error(lambda: ik.solve(targets, seed=1), "IK.solve(): unknown keyword argument 'seed' (did you mean")
        expect_argument_type_error(lambda: ik.activate("0"), "IK.activate(): device: expected int, got str")
        expect_argument_type_error(lambda: ik.solve(targets, out=np.zeros(3)), "IK.solve(): out: expected a kiln.IKResult")


def test_trajopt(runtime, trajopt_plugin):
    np = pytest.importorskip("numpy")
    runtime.publish("kiln-trajopt", "iiwa14", trajopt_plugin, archs=PLUGIN_ARCHS)
    with runtime.load("kiln-trajopt", "iiwa14").trajopt() as trajopt:
        expect_argument_type_error(lambda: trajopt.solve(np.zeros(7, np.float32), seeds="4"),
                                   "TrajOpt.solve(): seeds: expected int, got str")
