import json
from pathlib import Path

import numpy as np
import pytest

from keras_nalu.losses import NormalizedMeanSquaredError
from nalu_research.experiments.mystery_arithmetic import (
    MysteryArithmeticExperiment,
    build_model,
    loss_of,
)
from nalu_research.tasks.mystery import MysteryArithmetic
from tests.processes import run_in_process, tensorboard_scalars

EXAMPLE = Path(__file__).resolve().parents[1] / "examples" / "mystery_arithmetic.py"


def test_configuration_is_fixed_by_the_seed_with_distinct_inputs():
    task = MysteryArithmetic(seed=4)
    assert task.configuration == MysteryArithmetic(seed=4).configuration
    assert task.configuration != MysteryArithmetic(seed=5).configuration
    assert len(task.configuration) == 10
    for i, j, op in task.configuration:
        assert i != j and 0 <= i < 100 and 0 <= j < 100 and op in ("add", "sub", "mul")


def test_targets_by_hand():
    task = MysteryArithmetic(input_size=3, output_size=4, seed=0)
    task.configuration = [(0, 1, "add"), (1, 2, "sub"), (2, 0, "mul"), (0, 2, "div")]
    np.testing.assert_allclose(task.targets([[2.0, -3.0, 5.0]]), [[-1, -8, 10, 0.4]])


def test_splits_draw_from_their_ranges_with_signed_inputs():
    task = MysteryArithmetic(seed=0)
    x_train, y_train = task.sample(2000, "train", seed=1)
    x_test, _ = task.sample(2000, "test", seed=2)
    assert -10 <= x_train.min() < -9 and 9 < x_train.max() <= 10
    assert -50 <= x_test.min() < -45 and 45 < x_test.max() <= 50
    assert y_train.shape == (2000, 10) and (y_train < 0).any()


@pytest.mark.parametrize(
    "kwargs, message",
    [
        ({"input_size": 1}, "`input_size`.*at least 2"),
        ({"output_size": 0}, "`output_size`.*output_size=0"),
        ({"operations": ("pow",)}, "`operations`.*'pow'"),
        ({"operations": ()}, "`operations`"),
        ({"test_range": (5, -5)}, "`test_range`.*low < high"),
        ({"operations": ("div",)}, "`train_range` with 'div'.*excludes 0"),
        (
            {"operations": ("add", "div"), "train_range": ((-10, -1), (1, 10))},
            r"`test_range` with 'div'.*Received: test_range=\(-50.0, 50.0\)",
        ),
        (
            {
                "operations": ("div",),
                "train_range": ((-10, 0), (1, 10)),
                "test_range": ((-50, -1), (1, 50)),
            },
            "`train_range` with 'div'.*excludes 0",
        ),
    ],
)
def test_invalid_arguments_raise(kwargs, message):
    with pytest.raises(ValueError, match=message):
        MysteryArithmetic(**kwargs)


def test_division_on_ranges_that_exclude_zero():
    away = {"train_range": ((-10, -1), (1, 10)), "test_range": ((-50, -1), (1, 50))}
    task = MysteryArithmetic(operations=("add", "sub", "mul", "div"), seed=0, **away)
    assert "div" in [op for _, _, op in task.configuration]
    x_train, y_train = task.sample(4000, "train", seed=1)
    x_test, _ = task.sample(4000, "test", seed=2)
    assert 1 <= np.abs(x_train).min() < 1.01 and np.abs(x_train).max() <= 10
    assert (x_train < 0).mean() == pytest.approx(0.5, abs=0.01)
    assert 1 <= np.abs(x_test).min() and 49 < np.abs(x_test).max() <= 50
    assert np.abs(y_train).max() <= 100  # 10 * 10 and 10 / 1 at most
    # With denominators away from 0 the simulated threshold is a stable number
    # (on U[-50, 50] it moves by orders of magnitude with the simulation's seed).
    thresholds = [task.success_threshold(samples=50_000, seed=k) for k in range(3)]
    assert max(thresholds) < 1.05 * min(thresholds)


def test_invalid_split_raises():
    with pytest.raises(ValueError, match="`split`.*split='validation'"):
        MysteryArithmetic().sample(3, "validation")


@pytest.mark.research  # plots with matplotlib
@pytest.mark.parametrize("strategy", ["mirrored", "multi-worker"])
def test_example_smoke_run(tmp_path, strategy):
    # A MirroredStrategy over the local CPU (model.fit), or a one-worker
    # MultiWorkerMirroredStrategy (no TF_CONFIG: the custom training loop):
    # the same lines and logs.
    result = run_in_process(
        "mystery_arithmetic", "--epochs", "2", "--train-size", "64",
         "--test-size", "64", "--json", str(tmp_path / "m.json"),
         "--strategy", strategy, "--checkpoint-dir", str(tmp_path / "state"),
         "--tensorboard", str(tmp_path / "tb"),
    )  # fmt: skip
    assert result.returncode == 0, result.stderr[-3000:]
    names = ("Dense-ReLU", "NAC", "NALU", "iNALU")
    for name in names:
        assert f"| {name} |" in result.stdout
        assert f"{name} no" in result.stdout  # 2 epochs solve nothing
    data = json.loads((tmp_path / "m.json").read_text())
    assert len(data["models"]["NALU"]["test_mse"]) == 2
    operations = set(data["models"]["NALU"]["test_mse_by_operation"])
    assert operations == {"add", "sub", "mul"}  # seed 0 has all three
    assert (tmp_path / "m.png").stat().st_size > 1000  # beside the JSON
    assert not (tmp_path / "state").exists()  # the checkpoints are removed
    # Not a terminal: a line per evaluation (epoch of 2 batches) with the test
    # errors and the time left, then one per model.
    lines = [line for line in result.stdout.splitlines() if line.startswith("epoch ")]
    assert [line.split(" - ")[0] for line in lines] == [
        f"epoch {epoch}/2 (step {2 * epoch})" for epoch in (1, 2)
    ] * 4
    assert " - test_mse_mul " in lines[0] and lines[0].endswith(" left")
    for i, name in enumerate(names, start=1):
        assert f"model {i}/4 ({name}) - train loss " in result.stdout
    # TensorBoard: a run per model, the loss and the test errors.
    tags = {"loss", "test_mse", *(f"test_mse_{op}" for op in operations)}
    assert tensorboard_scalars(tmp_path / "tb") == {
        name: dict.fromkeys(tags, [2, 4]) for name in names
    }


@pytest.mark.research  # plots with matplotlib
@pytest.mark.parametrize(
    "name, options",
    [("NAU-NMU", []), ("NAU-NMRU", ["--division"])],
)
def test_our_models_train_snap_and_print_their_formulas(tmp_path, name, options):
    result = run_in_process(
        "mystery_arithmetic", "--models", name, *options, "--epochs", "2",
         "--train-size", "64", "--test-size", "64",
         "--json", str(tmp_path / "m.json"),
    )  # fmt: skip
    assert result.returncode == 0, result.stderr[-3000:]
    assert f"| {name} |" in result.stdout and f"{name} no" in result.stdout
    # 4 steps learn nothing exact: snapped (or refused, if snapping made it
    # worse), no output is solved.
    assert f"{name} snapped to exact weights: " in result.stdout
    data = json.loads((tmp_path / "m.json").read_text())
    assert set(data["models"]) == {name}
    found = data["snapped"][name]
    assert found["solved"] == [] and len(found["formulas"]) in (0, 10)
    if options:  # seed 0's task with division has two quotients
        assert "y2 = x17/x81" in result.stdout
        assert "from U[-10, -1] u U[1, 10], test on 64 from U[-50, -1] u U[1, 50]" in (
            result.stdout
        )
        assert "div" in data["models"][name]["test_mse_by_operation"]
        assert data["arguments"]["loss"] is None  # the model's default


def test_the_nau_nmru_trains_on_the_normalized_mse_unless_told_otherwise():
    y = np.array([[1.0, 10.0], [3.0, 30.0]], "float32")
    loss = loss_of("NAU-NMRU", None, y)
    assert isinstance(loss, NormalizedMeanSquaredError)
    assert loss.variance == [1.0, 100.0]
    assert loss_of("NAU-NMRU", "mse", y) == "mse"
    assert loss_of("NAU-NMU", None, y) == "mse"
    assert loss_of("NAC", "normalized", y).variance == [1.0, 100.0]
    model = build_model("NAU-NMRU", 100, steps=10)
    assert [type(layer).__name__ for layer in model.layers[1:3]] == ["NAU", "NMRU"]
    assert model.layers[1].units == 20 and model.layers[2].units == 20


@pytest.mark.research  # parse_args checks that matplotlib can draw the plot
@pytest.mark.parametrize(
    "argv",
    [
        ["--models", "NAU-NMRU", "--train-size", "1"],
        ["--models", "NAC", "--loss", "normalized", "--train-size", "1"],
    ],
)
def test_the_normalized_loss_needs_two_training_examples(argv, capsys):
    with pytest.raises(SystemExit):
        MysteryArithmeticExperiment().parse_args(argv)
    assert "--train-size must be at least 2 with the normalized loss" in (
        capsys.readouterr().err
    )
    MysteryArithmeticExperiment().parse_args(
        ["--models", "NAC", "--train-size", "1"]
    )  # the MSE needs one


def test_success_threshold_matches_the_analytic_value():
    # Two inputs: a - b of the perturbed solution is (1 - 2e)(x_i - x_j), so the
    # MSE is 4 e^2 E[(x_i - x_j)^2] = 8 e^2 var(x), var = 100^2 / 12 on U[-50, 50].
    task = MysteryArithmetic(input_size=2, output_size=1, operations=("sub",))
    threshold = task.success_threshold(epsilon=1e-3, samples=200_000)
    assert threshold == pytest.approx(8e-6 * 100**2 / 12, rel=0.02)
    exact_sum = MysteryArithmetic(input_size=2, output_size=1, operations=("add",))
    assert exact_sum.success_threshold(epsilon=1e-3) == pytest.approx(0, abs=1e-20)
    assert 0 < MysteryArithmetic(seed=0).success_threshold(samples=20_000) < 0.01
