import json
from pathlib import Path

import numpy as np
import pytest

from nalu_research.tasks.recurrent_arithmetic import RecurrentArithmetic
from tests.processes import run_in_process, tensorboard_scalars

EXAMPLE = Path(__file__).resolve().parents[1] / "examples" / "recurrent_arithmetic.py"


def test_targets_sum_over_slices_and_time():
    task = RecurrentArithmetic("mul", seed=0)
    x = np.zeros((1, 3, 10))
    x[0, :, task.a_slice] = 1.0  # a = 3 steps x 2 inputs
    x[0, 0, task.b_slice] += 2.0
    # a: 2 inputs x 3 steps of 1, plus 2 on the one overlapping input = 8;
    # b: 3 steps of 1 on the overlap, plus 2 on both inputs at step 0 = 7.
    np.testing.assert_allclose(task.targets(x), [[8.0 * 7.0]])


def test_slices_are_the_static_tasks_and_fixed_by_the_seed():
    task = RecurrentArithmetic("add", seed=3)
    assert (task.a_slice, task.b_slice) == (
        RecurrentArithmetic("sub", seed=3).a_slice,
        RecurrentArithmetic("sub", seed=3).b_slice,
    )
    assert task.a_slice.stop - task.a_slice.start == 2
    assert task.a_slice.stop - task.b_slice.start == 1


def test_extrapolation_is_by_length_and_values_grow():
    task = RecurrentArithmetic("add", seed=0)
    x_train, y_train = task.sample(500, "train", seed=1)
    x_extrap, y_extrap = task.sample(50, "extrapolation", seed=2)
    assert x_train.shape == (500, 10, 10) and x_extrap.shape == (50, 1000, 10)
    assert x_extrap.min() >= 1 and x_extrap.max() <= 2
    assert y_extrap.min() > 50 * y_train.max()


def test_training_batches_are_reproducible():
    task = RecurrentArithmetic("add", seed=0)
    first = task.training_batches(4, 2, seed=5)[1][0]
    np.testing.assert_array_equal(first, task.training_batches(4, 2, seed=5)[1][0])


@pytest.mark.parametrize(
    "kwargs, message",
    [
        ({"train_length": 0}, "`train_length`.*train_length=0"),
        ({"extrapolation_length": -1}, "`extrapolation_length`"),
        ({"value_range": (2, 1)}, "low < high"),
        ({"operation": "pow"}, "`operation`"),
    ],
)
def test_invalid_arguments_raise(kwargs, message):
    with pytest.raises(ValueError, match=message):
        RecurrentArithmetic(**kwargs)


@pytest.mark.research  # plots with matplotlib
def test_example_smoke_run(tmp_path):
    # A MirroredStrategy over the local CPU, 2 checkpointed epochs of 10 steps.
    result = run_in_process(
        "recurrent_arithmetic", "--operations", "mul", "--models", "lstm",
         "nalu", "--seeds", "1", "--steps", "20", "--eval-size", "8",
         "--json", str(tmp_path / "r.json"), "--strategy", "mirrored",
         "--checkpoint-every", "10", "--checkpoint-dir", str(tmp_path / "state"),
         "--tensorboard", str(tmp_path / "tb"),
    )  # fmt: skip
    assert result.returncode == 0, result.stderr[-3000:]
    assert "| a*b |" in result.stdout and "(98.2)" in result.stdout
    runs = json.loads((tmp_path / "r.json").read_text())["runs"]
    assert {r["model"] for r in runs} == {"lstm", "nalu"}
    assert not any(r["diverged"] for r in runs)
    assert not (tmp_path / "state").exists()  # the checkpoints are removed
    # The errors after every epoch; the last are the table's.
    for r in runs:
        assert r["steps"] == [10, 20]
        for split in ("interpolation", "extrapolation"):
            assert len(r["curves"][split]) == 2
            assert r["curves"][split][-1] == r[split]
    # Not a terminal: a line per evaluation (epoch) with its step, the errors
    # and the time left, then one per run.
    lines = [line for line in result.stdout.splitlines() if line.startswith("epoch ")]
    assert [line.split(" - ")[0] for line in lines] == [
        "epoch 1/2 (step 10)", "epoch 2/2 (step 20)"
    ] * 2  # fmt: skip
    assert " - extrapolation_error " in lines[0] and lines[0].endswith(" left")
    assert "run 1/2 (a*b LSTM seed 0) - interpolation error " in result.stdout
    assert "run 2/2 (a*b NALU seed 0) - " in result.stdout
    assert (tmp_path / "r.png").stat().st_size > 1000  # beside the JSON
    # TensorBoard: a run per operation, model and seed, against the step.
    scalars = tensorboard_scalars(tmp_path / "tb")
    assert set(scalars) == {"mul/lstm/0", "mul/nalu/0"}
    for tags in scalars.values():
        assert tags == {
            "loss": [10, 20], "interpolation_error": [10, 20],
            "extrapolation_error": [10, 20],
        }  # fmt: skip


@pytest.mark.research  # parse_args checks that matplotlib can draw the plot
def test_our_products_run_only_when_named():
    from nalu_research.experiments.recurrent_arithmetic import (
        OPT_IN,
        RecurrentArithmeticExperiment,
    )

    parse_args = RecurrentArithmeticExperiment().parse_args
    assert not set(OPT_IN) & set(parse_args([]).models)
    assert parse_args(["--models", "nau-nmu"]).models == ["nau-nmu"]


@pytest.mark.research  # parse_args checks that matplotlib can draw the plot
def test_seeds_and_steps_not_given_come_from_the_defaults_or_quick():
    from nalu_research.experiments.recurrent_arithmetic import (
        RecurrentArithmeticExperiment,
    )

    parse_args = RecurrentArithmeticExperiment().parse_args
    assert (parse_args([]).seeds, parse_args([]).steps) == (3, 5000)
    quick = parse_args(["--quick", "--seeds", "2"])
    assert (quick.seeds, quick.steps) == (2, 2000)


@pytest.mark.research  # plots with matplotlib
def test_nau_nmu_learns_an_exact_square_that_snaps(tmp_path):
    # The NAUCell's two running sums (centered gradient) under an NMU whose
    # penalty ramps in over the run: a^2 exact at length 1,000 once snapped
    # (1,000 steps here, the example's 5,000 on the docs page).
    result = run_in_process(
        "recurrent_arithmetic", "--operations", "square", "--models",
         "nau-nmu", "--seeds", "1", "--steps", "1000", "--checkpoint-every",
         "500", "--eval-size", "100",
         "--json", str(tmp_path / "r.json"),
         "--checkpoint-dir", str(tmp_path / "state"),
    )  # fmt: skip
    assert result.returncode == 0, result.stderr[-3000:]
    assert "(1/1 snapped) |" in result.stdout
    runs = json.loads((tmp_path / "r.json").read_text())["runs"]
    for run in runs:
        assert run["snapped"] and run["snapped_extrapolation_error"] < 1e-6
