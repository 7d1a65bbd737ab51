"""The experiment skeleton (`nalu_research.experiment`): every experiment on
it, the shared arguments declared once and checked, the record a run writes,
export-and-serve written once."""

import argparse
import ast
import importlib
import inspect
import json
import math
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


# The argparse types whose values are checked at parse time: every numeric or
# path flag of an experiment takes one of them (or is a choice).
UNCHECKED_TYPES = {int, float, str, Path}


def typed_options(cls):
    """(flag, type name, nargs) of each option of `cls`'s parser that takes
    values."""
    return [
        (
            action.option_strings[-1],
            getattr(action.type, "__name__", None),
            action.nargs,
        )
        for action in cls().parser()._actions
        if action.option_strings and action.nargs != 0 and action.choices is None
    ]


@pytest.mark.research
@pytest.mark.parametrize("name", NAMES)
def test_every_flag_is_checked_at_parse_time(name, tmp_path, capsys):
    """NaN, negative and unwritable values of every flag of those kinds are
    refused by the parser, before any work: numbers by the shared types,
    output paths by trying to create a file where they go (`os.access` says
    yes to root everywhere, also in /proc)."""
    cls = experiment_class(name)
    parser = cls().parser()
    unchecked = [
        a.option_strings[-1]
        for a in parser._actions
        if a.option_strings and a.type in UNCHECKED_TYPES and a.choices is None
    ]
    assert not unchecked, f"{name}: {unchecked} take unchecked values"
    a_file = tmp_path / "a_file"
    a_file.write_text("")
    refused = {
        "positive_float": ["nan", "-1", "inf"],
        "non_negative_float": ["nan", "-1"],
        "positive_int": ["-1", "0", "nan"],
        "non_negative_int": ["-1", "nan"],
        "output_file": ["/proc/nalu-nowhere/x.json", f"{a_file}/x.json"],
        "output_folder": ["/proc/nalu-nowhere", f"{a_file}/x"],
        "output_folder_name": ["/proc/nalu-nowhere", f"{a_file}/x"],
        "_log_dir": ["/proc/nalu-nowhere", f"{a_file}/x"],
        "input_file": [str(tmp_path / "missing.json"), str(tmp_path)],
    }
    tried = 0
    for flag, kind, nargs in typed_options(cls):
        count = nargs if isinstance(nargs, int) else 1
        for value in refused.get(kind, []):
            with pytest.raises(SystemExit) as exit_info:
                cls().parse_args([flag, *[value] * count])
            assert exit_info.value.code == 2, (flag, value)
            assert f"argument {flag}:" in capsys.readouterr().err, (flag, value)
            tried += 1
    assert tried, f"{name}: no flag tried"


def test_an_unwritable_place_is_found_by_trying(tmp_path):
    from nalu_research.monitoring import output_file, output_folder

    with pytest.raises(argparse.ArgumentTypeError, match="creating a file in '/proc'"):
        output_file("/proc/nalu-nowhere/record.json")
    with pytest.raises(argparse.ArgumentTypeError, match="is a file, not a folder"):
        (tmp_path / "f").write_text("")
        output_folder(str(tmp_path / "f" / "sub"))
    assert (
        output_folder(str(tmp_path / "new" / "deeper")) == tmp_path / "new" / "deeper"
    )
    assert not (tmp_path / "new").exists()  # checked, nothing left behind
    assert not list(tmp_path.glob(".write-check-*"))


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
    assert record["cpu"]["cores"] >= 1 and isinstance(record["cpu"]["flags"], list)
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


class Diverging(Toy):
    """A toy whose second run's figure is NaN."""

    name = "demo"

    def train(self, args, run, session):
        return {"seed": run[1], "value": math.nan if run[1] == 1 else 1.0}


def test_nan_places_names_the_runs_and_fields():
    from nalu_research.experiment import nan_places

    rows = [
        {"a": 1.0, "b": [1.0, 2.0]},
        {"a": np.float32("nan"), "c": {"d": np.array([1.0, np.nan])}},
    ]
    assert nan_places(rows) == ["run 2: a", "run 2: c.d"]
    assert nan_places([{"a": math.inf, "b": None, "c": "nan"}]) == []


def test_a_diverged_run_overwrites_no_record_and_exits_non_zero(tmp_path, capsys):
    path = tmp_path / "toy.json"
    path.write_text('{"earlier": true}')
    assert Diverging().main(["--seeds", "2", "--json", str(path)]) == 1
    assert "the run diverged: NaN in run 2: value" in capsys.readouterr().err
    assert json.loads(path.read_text()) == {"earlier": True}  # untouched
    evidence = json.loads(
        (tmp_path / "toy.diverged.json").read_text(), parse_constant=str
    )
    assert evidence["runs"][1]["value"] == "NaN"
    # A divergence that is the finding: written in place, status 0.
    assert (
        Diverging().main(["--seeds", "2", "--json", str(path), "--keep-diverged"]) == 0
    )
    assert "runs" in json.loads(path.read_text(), parse_constant=str)


def test_a_selection_is_some_of_its_names_all_by_default(capsys):
    parser = argparse.ArgumentParser()
    arguments.add_selection(parser, "--units", ("nau", "nmu"), "the units")
    arguments.add_selection(parser, "--peers", ["gplearn"], "the peers", empty=True)
    arguments.add_shared(parser, {"models": arguments.Shared.all_of(["a", "b"])})
    args = parser.parse_args([])
    assert (args.units, args.peers, args.models) == (
        ["nau", "nmu"],
        ["gplearn"],
        ["a", "b"],
    )
    assert parser.parse_args(["--units", "nmu", "--peers"]).peers == []
    with pytest.raises(SystemExit):
        parser.parse_args(["--units"])  # at least one, unless empty=True
    with pytest.raises(SystemExit):
        parser.parse_args(["--models", "c"])
    assert "invalid choice: 'c'" in capsys.readouterr().err
    assert "(default: all, ['nau', 'nmu'])" in " ".join(parser.format_help().split())
