"""`--backend` on every example (`nalu_research.backends.run`), the strategy
check of the other backends, and the training-step benchmark."""

import argparse
import json
import os
import pkgutil
import subprocess
import sys
from pathlib import Path

import keras
import pytest

from nalu_research import backends, runs
from tests.processes import run_in_process

pytestmark = [pytest.mark.research, pytest.mark.processes]

ROOT = Path(__file__).resolve().parents[1]
EXAMPLES = ROOT / "examples"
EXPERIMENTS = ROOT / "nalu_research" / "experiments"
# Without KERAS_BACKEND (conftest and make set it), as a user runs an example.
ENV = {k: v for k, v in os.environ.items() if k != "KERAS_BACKEND"}
ENV["TF_CPP_MIN_LOG_LEVEL"] = "2"


def example(name, *args, cwd):
    return subprocess.run(
        [sys.executable, str(EXAMPLES / f"{name}.py"), *args],
        capture_output=True,
        text=True,
        env=ENV,
        cwd=cwd,
        check=False,
    )


def test_every_experiment_has_a_stub_and_a_default_backend():
    experiments = {m.name for m in pkgutil.iter_modules([str(EXPERIMENTS)])}
    assert set(backends.DEFAULTS) == experiments
    assert {p.stem for p in EXAMPLES.glob("*.py")} == experiments
    assert set(backends.DEFAULTS.values()) <= set(backends.BACKENDS)
    for name in backends.TENSORFLOW_ONLY:
        assert backends.DEFAULTS[name] == "tensorflow"


def test_choosing_the_backend_imports_no_keras(tmp_path):
    code = "import sys, nalu_research.backends; print('keras' in sys.modules)"
    result = subprocess.run(
        [sys.executable, "-c", code],
        capture_output=True,
        text=True,
        env=ENV,
        cwd=tmp_path,
    )
    assert result.returncode == 0, result.stderr[-3000:]
    assert result.stdout.strip() == "False"


@pytest.mark.parametrize(
    "argv", [["--backend", "nope"], ["--seeds", "1", "--backend=nope"]]
)
def test_run_rejects_an_unknown_backend(argv, capsys):
    with pytest.raises(SystemExit) as exit_:
        backends.run("demo", argv)
    assert exit_.value.code == 2
    error = capsys.readouterr().err
    assert "argument --backend: invalid choice: 'nope'" in error
    assert "'tensorflow', 'jax', 'torch'" in error


def test_an_example_rejects_an_unknown_backend_with_status_2(tmp_path):
    result = example("demo", "--backend", "nope", cwd=tmp_path)
    assert result.returncode == 2
    assert "argument --backend: invalid choice: 'nope'" in result.stderr


def test_run_rejects_an_unknown_keras_backend_variable(monkeypatch, capsys):
    monkeypatch.setenv("KERAS_BACKEND", "numpy")
    with pytest.raises(SystemExit) as exit_:
        backends.run("demo", [])
    assert exit_.value.code == 2
    assert "KERAS_BACKEND: invalid choice: 'numpy'" in capsys.readouterr().err


def test_run_refuses_another_backend_for_a_tensorflow_only_experiment(capsys):
    with pytest.raises(SystemExit) as exit_:
        backends.run("serving_benchmark", ["--backend", "jax"])
    assert exit_.value.code == 2
    assert "serving_benchmark runs on 'tensorflow' only" in capsys.readouterr().err


def test_run_names_the_extra_of_a_backend_not_installed(monkeypatch, capsys):
    find_spec = backends.importlib.util.find_spec
    monkeypatch.setattr(
        backends.importlib.util,
        "find_spec",
        lambda name: None if name == "jax" else find_spec(name),
    )
    with pytest.raises(SystemExit) as exit_:
        backends.run("demo", ["--backend", "jax"])
    assert exit_.value.code == 2
    assert 'pip install ".[jax]" (in a checkout' in capsys.readouterr().err


def test_a_default_backend_not_installed_gives_way_to_tensorflow(monkeypatch, capsys):
    assert backends.DEFAULTS["program_evaluation"] != "tensorflow"
    find_spec = backends.importlib.util.find_spec
    default = backends.DEFAULTS["program_evaluation"]
    monkeypatch.setattr(
        backends.importlib.util,
        "find_spec",
        lambda name: None if name == default else find_spec(name),
    )
    monkeypatch.delenv("KERAS_BACKEND", raising=False)
    assert backends.choose_backend("program_evaluation", []) == "tensorflow"
    assert f'pip install ".[{default}]"' in capsys.readouterr().err


def test_run_refuses_a_backend_other_than_that_of_an_imported_keras(capsys):
    other = next(b for b in backends.BACKENDS if b != keras.backend.backend())
    with pytest.raises(SystemExit) as exit_:
        backends.run("demo", ["--backend", other])
    assert exit_.value.code == 2
    assert "Keras was imported already" in capsys.readouterr().err


@pytest.mark.parametrize(
    "argv, variable, expected",
    [
        ([], None, backends.DEFAULTS["program_evaluation"]),
        ([], "torch", "torch"),
        (["--backend", "torch"], "jax", "torch"),
        (["--backend=tensorflow", "--seeds", "1"], "jax", "tensorflow"),
    ],
)
def test_backend_is_the_flag_else_the_variable_else_the_default(
    argv, variable, expected, monkeypatch
):
    monkeypatch.delitem(sys.modules, "keras")  # as before Keras is imported
    if variable is None:
        monkeypatch.delenv("KERAS_BACKEND", raising=False)
    else:
        monkeypatch.setenv("KERAS_BACKEND", variable)
    assert backends.choose_backend("program_evaluation", argv) == expected


@pytest.mark.parametrize("name", ["demo", "serving_benchmark"])
def test_help_lists_the_backend_and_its_default(name, tmp_path):
    result = run_in_process(name, "--help", cwd=tmp_path)
    assert result.returncode == 0, result.stderr[-3000:]
    text = " ".join(result.stdout.split())  # argparse wraps the help
    choices = (
        "tensorflow" if name in backends.TENSORFLOW_ONLY else "tensorflow,jax,torch"
    )
    assert f"--backend {{{choices}}}" in text
    assert "set before Keras is imported" in text
    if name not in backends.TENSORFLOW_ONLY:
        assert f"default {backends.DEFAULTS[name]}, measured fastest here" in text


def test_an_example_starts_without_tensorflow_start_up_lines(tmp_path):
    # TensorFlow writes them before it reads TF_CPP_MIN_LOG_LEVEL: left out
    # by the example's start, even at the level that shows everything.
    result = subprocess.run(
        [sys.executable, str(EXAMPLES / "serving_benchmark.py"), "--help"],
        capture_output=True,
        text=True,
        env={**ENV, "TF_CPP_MIN_LOG_LEVEL": "0"},
        cwd=tmp_path,
        check=False,
    )
    assert result.returncode == 0, result.stderr[-3000:]
    assert not backends._START_UP.search(result.stderr), result.stderr


def test_an_example_on_a_folder_another_run_holds_says_so_in_a_line(tmp_path, capsys):
    from keras_nalu.checkpoints import Checkpoint

    root = tmp_path / "checkpoints"
    with Checkpoint(root / "a+b" / "ReLU" / "0"):  # the demo's first run
        status = backends.run(
            "demo", ["--seeds", "1", "--epochs", "1", "--checkpoint-dir", str(root)]
        )
    assert status == 1
    err = capsys.readouterr().err
    assert "error: The checkpoint folder" in err and "is in use by another run" in err
    assert "Traceback" not in err


def test_a_distribution_strategy_needs_the_tensorflow_backend(monkeypatch, capsys):
    monkeypatch.setattr(keras.backend, "backend", lambda: "jax")
    with pytest.raises(SystemExit) as exit_:
        runs.create_strategy(argparse.Namespace(strategy="mirrored"))
    assert exit_.value.code == 2
    error = capsys.readouterr().err
    assert "argument --strategy" in error and "tensorflow backend" in error


@pytest.mark.parametrize("backend", ["jax", "torch"])
def test_an_example_trains_on_another_backend(backend, tmp_path):
    result = example(
        "identity", "--backend", backend,
        "--models", "NAC", "--seeds", "1", "--steps", "20",
        "--checkpoint-every", "10",
        "--png", str(tmp_path / "figure.png"), "--json", str(tmp_path / "runs.json"),
        cwd=tmp_path,
    )  # fmt: skip
    assert result.returncode == 0, result.stderr[-3000:]
    assert "Trained 1 models in" in result.stdout
    assert f"on the {backend} backend." in result.stdout
    settings = json.loads((tmp_path / "runs.json").read_text())["settings"]
    assert settings["backend"] == backend


def test_step_benchmark_prints_ratios_and_writes_json(tmp_path):
    result = example(
        "step_benchmark", "--quick", "--backends", "tensorflow", "torch",
        "--models", "demo", "--json", str(tmp_path / "steps.json"),
        cwd=tmp_path,
    )  # fmt: skip
    assert result.returncode == 0, result.stderr[-3000:]
    rows = [
        [cell.strip() for cell in line.strip("|").split("|")]
        for line in result.stdout.splitlines()
        if line.startswith("| ") and "first call" not in line
    ]
    # One of the five models, to keep the test short.
    header, *models = rows[:2]
    assert header[:6] == [
        "model", "tensorflow ms", "jax ms", "torch ms", "tf/jax ratio", "tf/torch ratio"
    ]  # fmt: skip
    assert [row[0] for row in models] == ["demo NALU"]
    results = json.loads((tmp_path / "steps.json").read_text())
    for row, model in zip(models, results["models"].values(), strict=True):
        tensorflow, jax, torch, _, ratio, fastest = row[1:]
        medians = model["ms_per_step"]
        # The table prints 3 significant digits of the measured values.
        assert float(tensorflow) == pytest.approx(medians["tensorflow"], rel=5e-3)
        assert float(torch) == pytest.approx(medians["torch"], rel=5e-3)
        assert jax == "-" and float(ratio) == pytest.approx(
            medians["tensorflow"] / medians["torch"], rel=5e-3
        )
        assert fastest == min(medians, key=medians.get)
    assert list(results["models"]) == ["demo"]
    for model in results["models"].values():
        assert set(model["ms_per_step"]) == {"tensorflow", "torch"}
        assert set(model["ratios"]) == {"tensorflow/torch"}
