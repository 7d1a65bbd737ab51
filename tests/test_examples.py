import importlib
import json
import re
import sys
from pathlib import Path

import numpy as np
import pytest
import tensorflow as tf

from tests.processes import (
    checkpoint_epoch,
    example_env,
    kill_when_written,
    run_command_in_process,
    run_in_process,
    tensorboard_scalars,
)

DEMO = Path(__file__).resolve().parents[1] / "examples" / "static_arithmetic.py"


@pytest.mark.research  # plots with matplotlib, reads TensorBoard logs
def test_static_arithmetic_demo_trains_prints_and_exports(tmp_path):
    export_dir, results = tmp_path / "model", tmp_path / "static.json"
    result = run_in_process(
        "static_arithmetic",
         "--steps", "200", "--checkpoint-every", "100", "--eval-size", "256",
         "--runs", "1", "--export-dir", str(export_dir), "--json", str(results),
         "--tensorboard", str(tmp_path / "tb"), cwd=tmp_path,
    )  # fmt: skip
    assert result.returncode == 0, result.stderr[-3000:]
    out = result.stdout
    rows = {
        cells[0]: cells
        for line in out.splitlines()
        if line.startswith("| ") and "---" not in line
        for cells in [[c.strip() for c in line.strip("|").split("|")]]
    }
    assert set(rows) == {"model", "ReLU6 MLP", "NALU-NALU"}
    for name in ("ReLU6 MLP", "NALU-NALU"):
        interpolation, extrapolation = float(rows[name][1]), float(rows[name][2])
        assert interpolation >= 0 and extrapolation >= 0  # numbers, not nan
        assert rows[name][4].endswith("/1") and rows[name][5].endswith("/1")
    served = re.findall(r"served +(\S+), exact a\*b = +(\S+)", out)
    assert len(served) == 3
    assert all(float(exact) > 0 for _, exact in served)
    reloaded = tf.saved_model.load(str(export_dir))
    assert reloaded.serve(tf.ones((2, 100))).shape == (2, 1)

    # Not a terminal: a line per epoch naming its step, the test errors and
    # the time left; a header before each run and a line after it.
    lines = out.splitlines()
    epochs = [line for line in lines if line.startswith("epoch ")]
    assert [line.split(" - ")[0] for line in epochs] == [
        "epoch 1/2 (step 100)", "epoch 2/2 (step 200)"
    ] * 2  # fmt: skip
    for metric in ("interpolation_error", "extrapolation_error", "extrapolation_mse"):
        assert f" - {metric} " in epochs[0]
    assert epochs[0].endswith(" left") and epochs[1].endswith(", done")
    ran = [line for line in lines if line.startswith("run ")]
    assert [line.split(" - ")[0] for line in ran] == [
        "run 1/2 (ReLU6 MLP, seed 1)", "run 2/2 (NALU-NALU, seed 1)"
    ]  # fmt: skip
    assert re.search(r" - solved so far [01]/1 - strict [01]/1 - ", ran[1])
    assert ran[0].endswith(" left") and ran[1].endswith(", done")
    assert lines.index("NALU-NALU, seed 1:") < lines.index(epochs[2])

    # The results, each run's errors after every epoch, and the plot beside.
    record = json.loads(results.read_text())
    assert record["settings"]["operation"] == "mul"
    assert record["settings"]["strict_threshold"] > 0
    runs = {run["model"]: run for run in record["runs"]}
    assert set(runs) == {"ReLU6 MLP", "NALU-NALU"}
    for name, run in runs.items():
        assert run["seed"] == 1 and run["selected"]
        assert float(rows[name][1]) == pytest.approx(
            run["interpolation_error"], rel=1e-3
        )
        assert run["epochs"]["step"] == [100, 200]
        for metric in ("interpolation_error", "extrapolation_mse"):
            assert run["epochs"][metric][-1] == pytest.approx(run[metric])
        strict = run["extrapolation_mse"] < record["settings"]["strict_threshold"]
        assert run["strict"] == strict
    png = tmp_path / "static.png"
    assert png.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"

    # TensorBoard: a folder per run, the loss and the errors at every epoch.
    scalars = tensorboard_scalars(tmp_path / "tb")
    assert set(scalars) == {"mul/relu6/1", "mul/nalu/1"}
    tags = ("loss", "interpolation_error", "interpolation_mse",
            "extrapolation_error", "extrapolation_mse")  # fmt: skip
    for run in scalars.values():
        assert run == {tag: [100, 200] for tag in tags}


@pytest.mark.parametrize(
    "experiment, args, message",
    [
        ("static_arithmetic", ["--steps", "0"],
         "argument --steps: expected a positive integer, got '0'"),
        ("static_arithmetic", ["--runs", "0"],
         "argument --runs: expected a positive integer, got '0'"),
        ("static_arithmetic", ["--eval-size", "x"],
         "argument --eval-size: expected a positive integer, got 'x'"),
        ("static_arithmetic", ["--learning-rate", "0"],
         "argument --learning-rate: expected a finite number greater than 0 "
         "(at least 1.2e-38), got '0'"),
        ("mystery_arithmetic", ["--epochs", "0"],
         "argument --epochs: expected a positive integer, got '0'"),
        ("mystery_arithmetic", ["--test-size", "-3"],
         "argument --test-size: expected a positive integer, got '-3'"),
        ("recurrent_arithmetic", ["--seeds", "0"],
         "argument --seeds: expected a positive integer, got '0'"),
        ("recurrent_arithmetic", ["--steps", "2.5"],
         "argument --steps: expected a positive integer, got '2.5'"),
        ("identity", ["--learning-rate", "inf"],
         "argument --learning-rate: expected a finite number greater than 0 "
         "(at least 1.2e-38), got 'inf'"),
    ],
)  # fmt: skip
def test_experiments_reject_each_bad_argument(capsys, experiment, args, message):
    module = importlib.import_module(f"nalu_research.experiments.{experiment}")
    with pytest.raises(SystemExit) as exit_info:
        module.main(args)  # parsing fails before any work
    assert exit_info.value.code == 2
    assert message in capsys.readouterr().err


# Slow (three runs of the example, about 35 s): `make test` keeps the
# resume of training.fit in-process (tests/test_training.py) and end to end
# through the demo and program evaluation; run it with `pytest -m slow`.
@pytest.mark.processes
@pytest.mark.slow
@pytest.mark.research  # plots with matplotlib
def test_static_demo_killed_mid_run_resumes_to_the_uninterrupted_weights(tmp_path):
    def command(name):
        return [sys.executable, str(DEMO), "--steps", "6000", "--checkpoint-every",
                "500", "--runs", "1", "--models", "nalu", "--eval-size", "256",
                "--export-dir", str(tmp_path / f"{name}_model"),
                "--json", str(tmp_path / f"{name}.json"),
                "--checkpoint-dir", str(tmp_path / f"{name}_checkpoints")]  # fmt: skip

    env = example_env()
    whole = run_command_in_process(command("whole"))
    assert whole.returncode == 0, whole.stderr[-3000:]
    assert not (tmp_path / "whole_checkpoints").exists()  # cleaned up when done

    state = tmp_path / "killed_checkpoints" / "mul" / "nalu" / "1"
    kill_when_written(command("killed"), state, env)
    killed_at = 500 * checkpoint_epoch(state)
    assert 0 < killed_at < 6000 and not (tmp_path / "killed_model").exists()

    resumed = run_command_in_process(command("killed"))
    assert resumed.returncode == 0, resumed.stderr[-3000:]
    assert "resumed from its checkpoint" in resumed.stdout
    x = np.random.default_rng(0).uniform(1, 6, (16, 100)).astype("float32")
    whole_model = tf.saved_model.load(str(tmp_path / "whole_model"))
    resumed_model = tf.saved_model.load(str(tmp_path / "killed_model"))
    np.testing.assert_allclose(
        resumed_model.serve(x).numpy(), whole_model.serve(x).numpy(), rtol=1e-6
    )

    # The test errors after every epoch, before the kill too, are the same.
    def curves(name):
        (run,) = json.loads((tmp_path / f"{name}.json").read_text())["runs"]
        return run["epochs"]

    whole_curves, resumed_curves = curves("whole"), curves("killed")
    assert whole_curves["step"] == resumed_curves["step"] == list(range(500, 6001, 500))
    for metric in ("loss", "interpolation_error", "extrapolation_error"):
        np.testing.assert_allclose(
            resumed_curves[metric], whole_curves[metric], rtol=1e-5
        )
