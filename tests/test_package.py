"""The package's shape: its public API, what importing it pulls in, one
version, and the boundary between the library and the research harness."""

import ast
import configparser
import importlib
import importlib.metadata
import inspect
import os
import re
import subprocess
import sys
from pathlib import Path

import keras
import pytest

import keras_nalu
from tests.processes import blocking_imports

ROOT = Path(__file__).resolve().parents[1]
LIBRARY = ROOT / "keras_nalu"

# The public API beside the layers, each name and the module defining it. The
# layers are the package's one list of them, `keras_nalu.layers.__all__`,
# each defined in the module of its name (`RealNPU` in layers/real_npu.py).
PUBLIC_API = {
    "export_saved_model": "keras_nalu.export",
    "expressions": "keras_nalu.formulas",
    "formulas": "keras_nalu.formulas",
    "initializers": "keras_nalu.initializers",
    "ops": "keras_nalu.ops",
    "losses": "keras_nalu.losses",
    "regularizers": "keras_nalu.regularizers",
    "snap_weights": "keras_nalu.snapping",
}
# Public modules a user imports by name, beside the top-level ones.
PUBLIC_MODULES = (
    "keras_nalu.training",
    "keras_nalu.distribute",
    "keras_nalu.layers",
    "keras_nalu.snapping",
    "keras_nalu.formulas",
    "keras_nalu.gradients",
    "keras_nalu.validation",
    "keras_nalu.testing",
)


def _module_of(value):
    return value.__name__ if isinstance(value, type(sys)) else value.__module__


def layer_module(name):
    """`keras_nalu.layers.real_npu` for `RealNPU`: each layer's own module."""
    words = re.sub(r"(?<=[a-z])(?=[A-Z])|(?<=[A-Z])(?=[A-Z][a-z])", "_", name)
    return f"keras_nalu.layers.{words.lower()}"


def test_public_api_is_pinned():
    layers = keras_nalu.layers.__all__
    assert sorted(keras_nalu.__all__) == sorted([*PUBLIC_API, *layers])
    for name, module in PUBLIC_API.items():
        assert _module_of(getattr(keras_nalu, name)) == module, name
    for name in layers:
        assert getattr(keras_nalu, name) is getattr(keras_nalu.layers, name)
        assert _module_of(getattr(keras_nalu, name)) == layer_module(name), name
    for module in PUBLIC_MODULES:
        importlib.import_module(module)


def test_every_layer_module_and_registered_layer_is_exported():
    """A public module of keras_nalu/layers/ is the module of an exported
    layer, and every layer registered under the package name is exported: a
    layer missing from `keras_nalu.layers.__all__` fails here."""
    exported = keras_nalu.layers.__all__
    modules = {
        f"keras_nalu.layers.{path.stem}"
        for path in (LIBRARY / "layers").glob("[!_]*.py")
    }
    assert modules == {layer_module(name) for name in exported}
    registered = {
        cls
        for key, cls in keras.saving.get_custom_objects().items()
        if key.startswith("keras_nalu>")
        and isinstance(cls, type)
        and issubclass(cls, keras.layers.Layer)
    }
    assert registered == {getattr(keras_nalu.layers, name) for name in exported}


def test_every_public_layer_is_registered_under_the_package_name():
    for name in keras_nalu.layers.__all__:
        cls = getattr(keras_nalu.layers, name)
        assert keras.saving.get_registered_name(cls) == f"keras_nalu>{name}"


# Importing the library with the harness and the research-only dependencies
# made unimportable: it must neither need nor load any of them.
_ISOLATED_IMPORT = (
    blocking_imports("nalu_research", "tensorflow_datasets", "sklearn", "matplotlib")
    + """
import keras_nalu, keras_nalu.training, keras_nalu.distribute, keras_nalu.export
import keras
model = keras.Sequential([keras.Input((2,)), keras_nalu.NALU(1)])
assert model.predict(keras.ops.ones((1, 2)), verbose=0).shape == (1, 1)
print(sorted({name.split(".")[0] for name in sys.modules} & BLOCKED))
"""
)


@pytest.mark.processes
@pytest.mark.backends
def test_import_pulls_in_no_experiment_code_and_no_research_dependency():
    result = subprocess.run(
        [sys.executable, "-c", _ISOLATED_IMPORT],
        capture_output=True,
        text=True,
        env={**os.environ, "TF_CPP_MIN_LOG_LEVEL": "3"},
        check=False,
    )
    assert result.returncode == 0, result.stderr[-3000:]
    assert result.stdout.strip().splitlines()[-1] == "[]"


def _library_sources():
    return sorted(LIBRARY.rglob("*.py"))


def _imported_modules(tree):
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            yield from (alias.name for alias in node.names)
        elif isinstance(node, ast.ImportFrom) and node.module:
            yield node.module
            yield from (f"{node.module}.{alias.name}" for alias in node.names)


def test_library_source_never_imports_the_harness():
    """Also catches imports inside functions, which an import test misses."""
    for path in _library_sources():
        for module in _imported_modules(ast.parse(path.read_text())):
            assert not module.startswith("nalu_research"), (path, module)


def test_library_never_prints():
    """Library code warns or logs; printing is for the harness's commands."""
    for path in _library_sources():
        for node in ast.walk(ast.parse(path.read_text())):
            if isinstance(node, ast.Call) and getattr(node.func, "id", None) == "print":
                raise AssertionError(f"print() in {path}:{node.lineno}")


def test_private_modules_stay_inside_their_package():
    """`keras_nalu._x` and `keras_nalu.layers._x` are used only by the
    library; the harness, the examples and the tests use its public API."""
    private = re.compile(r"(^|\.)_[a-z]")
    for folder in ("nalu_research", "examples", "tests"):
        for path in sorted((ROOT / folder).rglob("*.py")):
            for module in _imported_modules(ast.parse(path.read_text())):
                if module.startswith("keras_nalu"):
                    assert not private.search(module), (path, module)


def test_version_has_one_source():
    setup = configparser.ConfigParser()
    setup.read(ROOT / "setup.cfg")
    assert setup["metadata"]["version"] == "attr: keras_nalu.__version__"
    assert importlib.metadata.version("keras-neural-arithmetic") == (
        keras_nalu.__version__
    )
    changelog = (ROOT / "CHANGELOG.md").read_text()
    released = re.findall(r"^## \[?(\d+\.\d+\.\d+)", changelog, re.M)
    assert released[0] == keras_nalu.__version__


def test_each_extra_lists_a_dependency_once():
    """Each dependency in one extra; extras compose others by naming the
    package itself (`keras-neural-arithmetic[formulas]`)."""
    setup = configparser.ConfigParser()
    setup.read(ROOT / "setup.cfg")
    extras = setup["options.extras_require"]
    seen = {}
    for extra in extras:
        for line in filter(None, extras[extra].splitlines()):
            name = re.split(r"[\[<>=!~ ]", line.strip())[0].lower()
            if name == "keras-neural-arithmetic":
                included = re.search(r"\[(.*)\]", line).group(1).split(",")
                assert set(included) <= set(extras), (extra, included)
                continue
            assert name not in seen, f"{name} in both {seen.get(name)} and {extra}"
            seen[name] = extra


@pytest.mark.processes
def test_the_namesake_distribution_is_named_at_import(tmp_path):
    """`keras-nalu` (2019, PyPI) ships the import package `keras_nalu` too:
    where its metadata is found, importing this package says so and how to
    fix it (its files would have overwritten or deleted ours)."""
    info = tmp_path / "keras_nalu-1.3.0.dist-info"
    info.mkdir()
    (info / "METADATA").write_text(
        "Metadata-Version: 2.1\nName: keras-nalu\nVersion: 1.3.0\n"
    )
    env = {**os.environ, "PYTHONPATH": str(tmp_path), "TF_CPP_MIN_LOG_LEVEL": "3"}
    result = subprocess.run(
        [sys.executable, "-c", "import keras_nalu"],
        capture_output=True,
        text=True,
        env=env,
        check=False,
    )
    assert result.returncode == 1
    assert "ImportError: Another distribution, keras-nalu 1.3.0" in result.stderr
    assert "pip uninstall -y keras-nalu keras-neural-arithmetic" in result.stderr


def _public_callables():
    """`{name: callable}` of the public API: `keras_nalu.__all__`'s functions
    and classes, and the public functions and classes of its public modules
    (a class as its `__init__`, its public methods too)."""
    modules = [keras_nalu, *map(importlib.import_module, PUBLIC_MODULES)]
    modules += [keras_nalu.ops, keras_nalu.initializers, keras_nalu.losses]
    modules += [
        keras_nalu.regularizers,
        importlib.import_module("keras_nalu.checkpoints"),
    ]
    found = {}
    for module in modules:
        names = getattr(module, "__all__", None) or [
            n for n in vars(module) if not n.startswith("_")
        ]
        for name in names:
            value = getattr(module, name)
            if not callable(value) or isinstance(value, type(sys)):
                continue
            if not getattr(value, "__module__", "").startswith("keras_nalu"):
                continue  # imported from elsewhere (keras, numpy, ...)
            qualified = f"{value.__module__}.{value.__qualname__}"
            if isinstance(value, type):
                found[qualified] = value.__init__
                for method, member in vars(value).items():
                    if callable(member) and not method.startswith("_"):
                        if method not in ("call", "build", "get_config"):
                            found[f"{qualified}.{method}"] = member
            else:
                found[qualified] = value
    return found


def test_the_public_api_is_fully_typed():
    """Every parameter and every return of the public functions and classes
    has a type hint, and none hides its arguments behind a bare `**kwargs`
    except the layers' (Keras's base-layer arguments), which are typed."""
    callables = _public_callables()
    missing = []
    for name, function in sorted(callables.items()):
        if function is object.__init__:
            continue  # a dataclass or a class without a constructor of its own
        signature = inspect.signature(function)
        for parameter in signature.parameters.values():
            if parameter.name != "self" and parameter.annotation is parameter.empty:
                missing.append(f"{name}({parameter.name})")
        if signature.return_annotation is signature.empty:
            missing.append(f"{name} -> ?")
    assert not missing, missing
    assert len(callables) >= 60  # the count the closing note of issue 41 gives
