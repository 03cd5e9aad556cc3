#!/usr/bin/env python3
"""kiln from Python in one page (docs/python.md): build on miss, list, resolve, load, call; IK.

    PYTHONPATH=<prefix>/lib/python3/dist-packages python3 python/examples/quickstart.py [--ik PLUGIN.so]

Builds examples/plugin/plugin.cpp (a host-only plugin offering kiln.example/1) from a recipe
given as a dict, loads it and calls it through ctypes. With --ik, publishes an IK plugin file
(e.g. build/plugins/ik/libkiln_ik_iiwa14.so) and solves IK targets made with its own forward
kinematics, on device 0 or, without a GPU, host only. The store is the usual one
(KILN_CACHE_DIR, else ~/.cache/kiln); without a GPU, declare one: KILN_DEVICE=sm_90.
Exits with kiln's exit code on a kiln error, as the kiln CLI does.
"""

import argparse
import ctypes
import pathlib
import sys

import numpy as np

import kiln

EXAMPLE_DIR = pathlib.Path(__file__).resolve().parents[2] / "examples" / "plugin"
RECIPE = {"schema": 1, "consumer": "example", "name": "fma-built", "sources": ["plugin.cpp"],
          "archs": ["sm_90"], "artifact": "libexample_fma.so"}


class ExampleV1(ctypes.Structure):
    """kiln_example_v1 (abi/kiln/ext/example.h), the part used here."""
    _fields_ = [("struct_size", ctypes.c_uint32),
                ("host_fma", ctypes.CFUNCTYPE(ctypes.c_double, ctypes.c_void_p, ctypes.c_double,
                                              ctypes.c_double, ctypes.c_double))]


def example(runtime):
    plan = runtime.plan(RECIPE, base_dir=EXAMPLE_DIR)                   # kiln build fma.json --plan
    print(f"plan: {plan['consumer']}/{plan['name']} is {plan['state']} (input key {plan['input_key']})")
    built = runtime.build(RECIPE, base_dir=EXAMPLE_DIR)                 # kiln build fma.json
    print(f"build: {built['outcome']} in {built['seconds']:.2f} s -> {built['content_key']}")
    module = runtime.ensure(RECIPE, base_dir=EXAMPLE_DIR)               # kiln ensure fma.json
    for item in runtime.list("example"):                                # kiln ls example
        print(f"ls: {item['consumer']}/{item['name']} {item['content_key']} in {item['store']}")
    print(f"resolve: {runtime.resolve('example', 'fma-built')['file']}")  # kiln show example fma-built
    print(f"load: {module.plugin_id} {module.plugin_version}, ABI {module.abi_version}, "
          f"interfaces {module.interfaces}, {module.report['timings']['total_ms']:.2f} ms")
    instance = module.create_instance()
    table = ExampleV1.from_address(instance.interface_address("kiln.example/1", ctypes.sizeof(ExampleV1)))
    value = table.host_fma(instance.handle, 2.0, 3.0, 4.0)
    print(f"kiln.example/1 host_fma(2, 3, 4) = {value}")
    return value == 10.0


def ik_demo(runtime, plugin, archs):
    runtime.publish("kiln-ik", "iiwa14", plugin, archs=archs)          # kiln publish ... --arch ...
    module = runtime.load("kiln-ik", "iiwa14")                          # kiln load kiln-ik iiwa14
    live = runtime.devices()["devices"]
    device = 0 if live else -1
    with module.ik() as ik:
        info = ik.info()
        print(f"ik: {info['robot']} {info['base_link']} -> {info['tip_link']}, {ik.dof} joints")
        print(f"fk(q = 0) = {np.round(ik.fk(np.zeros(ik.dof, np.float32)), 4)}")
        count = 256
        ik.activate(device, count)
        joints = ik.joints()
        lower = np.array([j["lower"] for j in joints])
        upper = np.array([j["upper"] for j in joints])
        rng = np.random.default_rng(0)
        truth = (lower + (upper - lower) * rng.uniform(0.1, 0.9, (count, ik.dof))).astype(np.float32)
        targets = ik.fk(truth)
        result = ik.solve(targets)
        where = f"device {device}" if device >= 0 else "host only"
        print(f"ik solve ({where}): {int(result.converged.sum())}/{count} converged, "
              f"median error {np.median(result.position_error) * 1e3:.4f} mm")
        return result.converged.mean() >= 0.99


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--ik", metavar="PLUGIN", help="an IK plugin file to publish, load and solve with")
    parser.add_argument("--archs", default="sm_90,compute_90", help="what the IK plugin was built for")
    args = parser.parse_args()
    try:
        runtime = kiln.Runtime()                                        # kiln doctor
        print(f"kiln {kiln.__version__}; stores {[s['root'] for s in runtime.stores()]}; "
              f"devices {[d['arch'] for d in runtime.devices()['effective']]}")
        ok = example(runtime)
        if args.ik:
            ok = ik_demo(runtime, args.ik, args.archs) and ok
    except kiln.Error as error:
        print(f"kiln: {type(error).__name__}: {error}", file=sys.stderr)
        for reason in error.reasons:
            print(f"  {reason['field']}: recorded {reason['recorded']}, current {reason['current']}", file=sys.stderr)
        return error.exit_code
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
