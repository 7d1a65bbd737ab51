"""The experiment skeleton (`nalu_research.experiment`): every experiment on
it, the shared arguments declared once and checked, the record a run writes,
export-and-serve written once."""

import ast
import importlib
import inspect
import json
import pkgutil
from pathlib import Path

import keras
import numpy as np
import pytest

import nalu_research.experiments
from nalu_research import arguments
from nalu_research.experiment import Experiment, record_of

ROOT = Path(__file__).resolve().parents[1]
NAMES = sorted(
    module.name for module in pkgutil.iter_modules(nalu_research.experiments.__path__)
)


def experiment_class(name):
    """The `Experiment` subclass defined in experiment module `name`."""
    module = importlib.import_module(f"nalu_research.experiments.{name}")
    found = [
        value
        for value in vars(module).values()
        if isinstance(value, type)
        and issubclass(value, Experiment)
        and value.__module__ == module.__name__
    ]
    assert len(found) == 1, f"{name} defines {len(found)} Experiment subclasses"
    return found[0]


@pytest.mark.research  # the experiments import the research extra's packages
@pytest.mark.parametrize("name", NAMES)
def test_every_experiment_stands_on_the_skeleton(name):
    cls = experiment_class(name)
    assert cls.name == name
    module = importlib.import_module(f"nalu_research.experiments.{name}")
    source = inspect.getsource(module.main)
    assert len(source.splitlines()) <= 25, f"{name}.main has grown"
    # No experiment declares a shared argument: `arguments.SHARED` does.
    tree = ast.parse(inspect.getsource(module))
    flags = {
        node.args[0].value
        for node in ast.walk(tree)
        if isinstance(node, ast.Call)
        and getattr(node.func, "attr", None) == "add_argument"
        and node.args
        and isinstance(node.args[0], ast.Constant)
    }
    shared = {"--" + key.replace("_", "-") for key in arguments.SHARED}
    assert not flags & shared, f"{name} declares {flags & shared} itself"


@pytest.mark.research
@pytest.mark.parametrize("name", NAMES)
@pytest.mark.parametrize(
    "argument, values",
    [
        ("learning_rate", ["-1", "nan", "inf", "0"]),
        ("seed", ["-1", "1.5"]),
        ("seeds", ["0", "-2"]),
        ("steps", ["0", "nan"]),
        ("epochs", ["-1"]),
        ("batch_size", ["0"]),
        ("clipnorm", ["-0.5", "nan"]),
    ],
)
def test_shared_arguments_are_refused_by_every_experiment(
    name, argument, values, capsys
):
    cls = experiment_class(name)
    if argument not in cls.arguments:
        pytest.skip(f"{name} takes no --{argument}")
    flag = "--" + argument.replace("_", "-")
    for value in values:
        with pytest.raises(SystemExit) as exit_info:
            cls().parse_args([flag, value])
        assert exit_info.value.code == 2
        assert f"argument {flag}: expected" in capsys.readouterr().err


def test_an_unknown_shared_argument_is_an_error():
    class Typo(Experiment):
        name = "demo"
        arguments = {"learning_rates": 0.1}

    with pytest.raises(ValueError, match="'learning_rates'"):
        Typo().parser()


class Toy(Experiment):
    """A toy: each run's row is its seed squared."""

    name = "demo"  # a key of nalu_research.backends.DEFAULTS
    arguments = {"seeds": 3, "steps": 10, "learning_rate": 0.5}
    record_path = "unused.json"

    def runs(self, args):
        return [("toy", seed) for seed in range(args.seeds)]

    def train(self, args, run, session):
        return {"seed": run[1], "value": run[1] ** 2}

    def progress(self, row):
        return {"value": row["value"]}

    def report(self, args, rows):
        print("values", [row["value"] for row in rows])

    def record(self, args, rows):
        return {"total": sum(row["value"] for row in rows)}


def test_the_skeleton_runs_every_run_and_writes_one_record(tmp_path, capsys):
    path = tmp_path / "records" / "toy.json"
    assert Toy().main(["--seeds", "2", "--json", str(path)]) == 0
    out = capsys.readouterr().out
    assert "run 1/2 (toy, 0) - value 0" in out and "run 2/2 (toy, 1) - value 1" in out
    assert "values [0, 1]" in out
    record = json.loads(path.read_text())
    assert record["experiment"] == "demo" and record["total"] == 1
    assert record["runs"] == [{"seed": 0, "value": 0}, {"seed": 1, "value": 1}]
    assert record["seeds"] == {"seeds": 2}
    assert record["budget"] == {"steps": 10}
    assert record["arguments"]["learning_rate"] == 0.5
    assert record["backend"] == keras.backend.backend()
    assert record["versions"]["keras"] == keras.__version__
    assert record["commit"] is None or len(record["commit"].split("+")[0]) == 40
    assert record["command"][0] == "examples/demo.py"
    assert not list(path.parent.glob("*.partial"))  # written whole


def test_record_of_lets_the_experiment_have_the_last_word(tmp_path):
    args = Toy().parse_args(["--json", str(tmp_path / "x.json")])
    record = record_of(Toy(), args, [], 1.5, {"runs": "mine", "extra": 2})
    assert (
        record["runs"] == "mine" and record["extra"] == 2 and record["seconds"] == 1.5
    )


@pytest.mark.processes
def test_export_and_serve_serves_from_a_process_without_keras(tmp_path):
    from nalu_research.serving import Export, export_and_serve

    model = keras.Sequential([keras.Input((2,)), keras.layers.Dense(1)])
    x = np.array([[1.0, 2.0], [3.0, -4.0]], "float32")
    served = export_and_serve([Export("dense", model, x)], tmp_path)
    assert served["dense"]["path"] == str(tmp_path / "dense")
    want = keras.ops.convert_to_numpy(model(x))[:, 0]
    np.testing.assert_allclose(np.ravel(served["dense"]["served"]), want, rtol=1e-6)
