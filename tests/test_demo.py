"""The demo (`make demo`, examples/demo.py): it trains, prints its table,
exports a SavedModel per row and serves them from a process that never
imports keras_nalu; a killed demo resumes to the same results."""

import json
import os
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

from nalu_research.experiments import demo
from tests.processes import (
    example_env,
    kill_when_written,
    run_command_in_process,
    tensorboard_scalars,
)

pytestmark = pytest.mark.processes

DEMO = Path(__file__).resolve().parents[1] / "examples" / "demo.py"
SMALL = ["--seeds", "1", "--epochs", "3", "--examples", "512"]
ENV = {**os.environ, "TF_CPP_MIN_LOG_LEVEL": "2"}


def run_demo(tmp_path, name, *extra):
    command = [
        sys.executable, str(DEMO), *SMALL,
        "--export-dir", str(tmp_path / f"{name}_models"),
        "--checkpoint-dir", str(tmp_path / f"{name}_checkpoints"),
        "--json", str(tmp_path / f"{name}.json"),
        *extra,
    ]  # fmt: skip
    return command


@pytest.fixture(scope="module")
def reference(tmp_path_factory):
    tmp_path = tmp_path_factory.mktemp("demo")
    result = run_command_in_process(run_demo(tmp_path, "reference"), cwd=tmp_path)
    assert result.returncode == 0, result.stderr[-3000:]
    return tmp_path, result.stdout


def table_rows(out):
    return [
        [cell.strip() for cell in line.strip("|").split("|")]
        for line in out.splitlines()
        if line.startswith("| a") and "---" not in line
    ]


ROWS = [(op, name) for op in demo.MODELS for name in demo.MODELS[op]]


def test_demo_prints_a_progress_line_per_row(reference):
    _, out = reference
    lines = [line for line in out.splitlines() if line.startswith("run ")]
    assert [line.split(" - ")[0] for line in lines] == [
        f"run {i}/{len(ROWS)} ({op} {name}, seed 0)"
        for i, (op, name) in enumerate(ROWS, 1)
    ]
    assert "median extrapolation error" in lines[0] and "left" in lines[0]
    assert lines[-1].endswith(", done")


# Slow (a whole demo, about 16 s; `make test` must stay under 10 minutes):
# the TensorBoard writer is tested end to end through the counting, number
# words and program evaluation examples; run it with `pytest -m slow`.
@pytest.mark.slow
@pytest.mark.research  # TensorBoard is in the research extra
def test_demo_logs_every_run_to_tensorboard(tmp_path):
    command = run_demo(tmp_path, "logged", "--tensorboard", str(tmp_path / "tb"))
    result = subprocess.run(command, capture_output=True, text=True, env=ENV)
    assert result.returncode == 0, result.stderr[-3000:]
    scalars = tensorboard_scalars(tmp_path / "tb")
    assert set(scalars) == {f"{demo.folder_name(*row)}/0" for row in ROWS}
    for run in scalars.values():
        assert run == {
            tag: [512 // 64 * epoch for epoch in (1, 2, 3)]
            for tag in ("loss", "interpolation_relative_error",
                        "extrapolation_relative_error")
        }  # fmt: skip


def test_demo_prints_every_model_and_serves_every_export(reference):
    tmp_path, out = reference
    rows = table_rows(out)
    expected = [(op, name) for op in demo.MODELS for name in demo.MODELS[op]]
    # The error table, then the served table (with an "exact" row per task).
    errors = [tuple(row[:2]) for row in rows if "[" in row[2]]
    assert errors == expected
    served = {tuple(row[:2]): row[2:] for row in rows if "[" not in row[2]}
    assert set(served) == set(expected) | {(op, "exact") for op in demo.MODELS}
    assert served[("a+b", "exact")] == ["579", "1999", "0.75"]
    assert served[("a*b", "exact")] == ["56088", "999000", "0.125"]
    results = json.loads((tmp_path / "reference.json").read_text())
    for (operation, name), cells in served.items():
        if name != "exact":
            values = results["served"][f"{operation} {name}"]
            assert [f"{v:.6g}" for v in values] == cells
    for operation, name in expected:
        folder = tmp_path / "reference_models" / demo.folder_name(operation, name)
        assert (folder / "saved_model.pb").is_file()
    assert not (tmp_path / "reference_checkpoints").exists()  # removed when done


def test_killed_demo_resumes_to_the_uninterrupted_results(reference, tmp_path):
    reference_dir, _ = reference
    command = run_demo(tmp_path, "killed")
    # Killed once the third model has written its first checkpoint.
    third = tmp_path / "killed_checkpoints" / "a+b" / "NAU" / "0"
    kill_when_written(command, third, example_env())
    result = run_command_in_process(command, cwd=tmp_path)
    assert result.returncode == 0, result.stderr[-3000:]
    assert "resumed from its checkpoint" in result.stdout
    resumed = json.loads((tmp_path / "killed.json").read_text())
    uninterrupted = json.loads((reference_dir / "reference.json").read_text())
    for got, want in zip(resumed["errors"], uninterrupted["errors"], strict=True):
        for split in ("interpolation", "extrapolation"):
            np.testing.assert_allclose(got[split], want[split], rtol=1e-6)
    for key, values in uninterrupted["served"].items():
        np.testing.assert_allclose(resumed["served"][key], values, rtol=1e-6)


@pytest.mark.parametrize(
    "args, message",
    [
        (["--seeds", "0"], "--seeds: expected a positive integer, got '0'"),
        (["--learning-rate", "-1"], "--learning-rate: expected a finite number"),
        (["--epochs", "two"], "--epochs: expected a positive integer, got 'two'"),
    ],
)
def test_demo_rejects_bad_arguments(capsys, args, message):
    with pytest.raises(SystemExit) as exit_info:
        demo.Demo().parse_args(args)
    assert exit_info.value.code == 2
    assert message in capsys.readouterr().err
