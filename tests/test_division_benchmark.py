"""The division benchmark (Mistry et al.'s single unit among 10 inputs): its
task, its options, and a smoke run of examples/division_benchmark.py that
solves U[1, 2], exports the snapped unit and serves it without keras_nalu."""

import json
from pathlib import Path

import numpy as np
import pytest

from nalu_research.experiments.division_benchmark import (
    TASK,
    UNITS,
    DivisionBenchmark,
    layer_options,
)
from nalu_research.tasks import StaticArithmetic
from nalu_research.tasks.static_arithmetic import MISTRY_RANGES
from tests.processes import run_in_process, tensorboard_scalars
from tests.test_export import serve_in_fresh_process

EXAMPLE = Path(__file__).resolve().parents[1] / "examples" / "division_benchmark.py"


def parse_args(argv):
    return DivisionBenchmark().parse_args(argv)


def test_the_task_is_two_adjacent_inputs_of_ten():
    for seed in range(20):
        task = StaticArithmetic("div", seed=seed, **TASK)
        a, b = task.a_slice, task.b_slice
        assert a.stop - a.start == b.stop - b.start == 1 and b.start == a.start + 1
        assert 0 <= a.start <= 8
    x, y = task.sample(4, "train", seed=0)
    np.testing.assert_allclose(y[:, 0], x[:, a.start] / x[:, b.start], rtol=1e-6)
    assert len(MISTRY_RANGES) == 9


@pytest.mark.research  # parse_args checks that matplotlib can draw the plot
def test_each_unit_trains_by_its_own_recipe():
    nmru, realnpu = parse_args([]), parse_args(["--unit", "realnpu"])
    assert (nmru.learning_rate, nmru.clipnorm, nmru.regularization) == (
        1e-2,
        1.0,
        [10.0, 50_000, 75_000],
    )
    assert (realnpu.learning_rate, realnpu.clipnorm, realnpu.regularization) == (
        5e-3,
        None,
        [1.0, 50_000, 75_000],
    )
    assert layer_options(nmru) == {"nmru": {"sign_retrieval": True}}
    assert layer_options(realnpu) == {"realnpu": {"gated": True}}
    off = parse_args(["--unit", "realnpu", "--no-gated", "--learning-rate", "0.1"])
    assert layer_options(off) == {"realnpu": {"gated": False}}
    assert off.learning_rate == 0.1
    # Each unit's results and export have their own default paths.
    assert str(nmru.json) == "results/division_benchmark.json"
    assert str(realnpu.json) == "results/division_benchmark_realnpu.json"
    assert realnpu.export_dir.endswith("division_realnpu")


@pytest.mark.parametrize(
    ("argv", "message"),
    [
        (["--unit", "realnpu", "--sign-retrieval"],
         "--sign-retrieval is an option of --unit nmru, not of --unit realnpu"),
        (["--no-gated"], "--gated is an option of --unit realnpu, not of --unit nmru"),
        (["--unit", "npu"], "invalid choice: 'npu'"),
    ],
)  # fmt: skip
def test_bad_options_are_refused(argv, message, capsys):
    with pytest.raises(SystemExit):
        parse_args(argv)
    assert message in capsys.readouterr().err


@pytest.mark.processes
@pytest.mark.research  # plots with matplotlib, TensorBoard logs
def test_smoke_run_solves_a_range_and_exports_it(tmp_path):
    # The NMRU's run; the RealNPU's differs in its recipe (tested above), its
    # engine model (tests/test_seed_batched.py) and its export, which
    # tests/test_units.py serves without keras_nalu.
    unit = "nmru"
    strength = str(UNITS[unit]["regularization"][0])
    result = run_in_process(
        "division_benchmark", "--unit", unit, "--ranges", "6", "1",
         "--seeds", "2", "--iterations", "8000", "--eval-every", "1000",
         "--eval-size", "256", "--regularization", strength, "3000", "5000",
         "--json", str(tmp_path / "d.json"), "--export-dir", str(tmp_path / "sm"),
         "--checkpoint-dir", str(tmp_path / "ck"),
         "--tensorboard", str(tmp_path / "tb"),
    )  # fmt: skip
    assert result.returncode == 0, result.stderr[-3000:]
    out = result.stdout
    assert "| 6 | U[1, 2] | U[2, 6] | 2/2 [0.34, 1.00] |" in out
    name = UNITS[unit]["name"]
    assert f"All ranges, one {name}: " in out
    assert "Mistry et al. published 91.6% for the NMRU over 9 ranges x 25" in out
    data = json.loads((tmp_path / "d.json").read_text())
    assert len(data["runs"]) == 4
    solved = [r for r in data["runs"] if r["range"] == 6]
    for run in data["runs"]:  # y0 = x_o / x_(o+1), as the seed's task has it
        task = StaticArithmetic("div", seed=run["seed"], **TASK)
        want = f"y0 = x{task.a_slice.start}/x{task.b_slice.start}"
        assert run["formula"] in (want, None)
    assert all(r["formula"] for r in solved)
    assert (tmp_path / "d.png").stat().st_size > 1000
    assert not (tmp_path / "ck").exists()
    assert set(tensorboard_scalars(tmp_path / "tb")) == {"range6", "range1"}
    # The exported unit divides exactly, served by TensorFlow alone.
    x = np.random.default_rng(0).uniform(2, 6, (5, 10)).astype("float32")
    task = StaticArithmetic("div", seed=solved[0]["seed"], **TASK)
    served = serve_in_fresh_process(tmp_path / "sm", {"x": x}, tmp_path)["x"]
    want = x[:, task.a_slice.start] / x[:, task.b_slice.start]
    np.testing.assert_allclose(served[:, 0], want, rtol=1e-6)
