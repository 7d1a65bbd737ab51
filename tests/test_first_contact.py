"""The first-contact benchmark: its task, that seeds trained side by side train
as each would alone, and a smoke run of examples/first_contact.py."""

import json
from pathlib import Path

import keras
import numpy as np
import pytest

from nalu_research.tasks.first_contact import (
    EXTRAPOLATION_RANGE,
    OPERATIONS,
    TRAIN_RANGES,
    relative_error,
    sample,
)
from tests.processes import run_in_process, tensorboard_scalars

EXAMPLE = Path(__file__).resolve().parents[1] / "examples" / "first_contact.py"


@pytest.mark.parametrize("operation", list(OPERATIONS))
def test_samples_lie_in_their_ranges_and_hold_the_exact_targets(operation):
    x, y = sample(operation, 500, "train", seed=0)
    low, high = TRAIN_RANGES[operation]
    assert x.shape == (500, 2) and y.shape == (500, 1) and x.dtype == np.float32
    assert low <= x.min() and x.max() <= high
    exact = OPERATIONS[operation](*np.split(x.astype(np.float64), 2, axis=1))
    np.testing.assert_array_equal(y, exact.astype(np.float32))
    x, _ = sample(operation, 500, "extrapolation", seed=0)
    magnitudes = np.abs(x)
    assert EXTRAPOLATION_RANGE[0] <= magnitudes.min()
    assert magnitudes.max() <= EXTRAPOLATION_RANGE[1]
    assert (x.min() < 0) == operation.startswith("signed")
    again, _ = sample(operation, 500, "extrapolation", seed=0)
    np.testing.assert_array_equal(x, again)


def test_relative_error_is_the_mean_error_over_the_mean_target():
    y = np.array([[1.0], [-3.0]])
    assert relative_error(y, y) == 0
    assert relative_error(y + 0.5, y) == pytest.approx(0.5 / 2)
    assert relative_error(np.array([np.nan, 1.0]), y) == float("inf")


@pytest.mark.parametrize(
    "kwargs, message",
    [
        ({"operation": "a%b"}, "`operation`, expected one of"),
        ({"split": "test"}, "`split`, expected 'train' or 'extrapolation'"),
    ],
)
def test_sample_rejects_unknown_arguments(kwargs, message):
    arguments = {"operation": "a+b", "n": 3, "split": "train", "seed": 0, **kwargs}
    with pytest.raises(ValueError, match=message):
        sample(**arguments)


@pytest.mark.research  # its arguments name a plot, which needs matplotlib
@pytest.mark.parametrize("unit", ["NALU", "NAU"])  # NAU: its penalty via add_loss
def test_seeds_trained_side_by_side_match_a_seed_trained_alone(unit, tmp_path):
    from nalu_research.experiment import Session
    from nalu_research.experiments import first_contact

    args = first_contact.FirstContactExperiment().parse_args(
        ["--epochs", "2", "--eval-every", "1", "--examples", "256",
         "--checkpoint-dir", str(tmp_path)]
    )  # fmt: skip
    data = sample("a+b", 256, "train", seed=0)
    tests = {"extrapolation": sample("a+b", 64, "extrapolation", seed=2)}
    keras.config.disable_interactive_logging()

    def train(seeds):
        session = Session(args, checkpoints=lambda *run: tmp_path / str(seeds))
        result = first_contact.train_row("a+b", unit, seeds, data, tests, args, session)
        return first_contact.predictions(result.model, tests["extrapolation"][0])

    together, alone = train([0, 1]), train([1])
    np.testing.assert_allclose(together[1], alone[0], rtol=1e-5, atol=1e-6)
    assert not np.allclose(together[0], together[1])  # the seeds differ


@pytest.mark.research  # plots with matplotlib, logs with TensorBoard
def test_example_smoke_run(tmp_path):
    result = run_in_process(
        "first_contact", "--seeds", "2", "--epochs", "2",
         "--eval-every", "1", "--examples", "256", "--operations", "a+b",
         "a*b", "--units", "NAC", "NMU", "--json", str(tmp_path / "fc.json"),
         "--tensorboard", str(tmp_path / "tb"),
         "--checkpoint-dir", str(tmp_path / "ckpt"), cwd=tmp_path,
    )  # fmt: skip
    assert result.returncode == 0, result.stderr[-3000:]
    out = result.stdout
    names = [(op, unit) for op in ("a+b", "a*b") for unit in ("NAC", "NMU")]
    lines = [line for line in out.splitlines() if line.startswith("model ")]
    assert [line.split(" - ")[0] for line in lines] == [
        f"model {i}/4 ({op} {unit})" for i, (op, unit) in enumerate(names, 1)
    ]
    assert "median extrapolation error" in lines[0] and lines[-1].endswith("done")
    rows = {
        (op, cells[0]): cells
        for op in ("a+b", "a*b")
        for block in [out.split(f"\n{op}: trained")[1].split("\n\n")[1]]
        for line in block.splitlines()
        if line.startswith("| N")
        for cells in [[c.strip() for c in line.strip("|").split("|")]]
    }
    saved = json.loads((tmp_path / "fc.json").read_text())
    assert set(rows) == set(names) | {
        (r["operation"], f"{r['unit']} + snap_weights "
         f"({sum(r['snapped']['verified'])}/2 verified)")
        for r in saved["rows"]
    }  # fmt: skip
    for row in saved["rows"]:
        final = row["errors"]["final"]["extrapolation"]
        cells = rows[(row["operation"], row["unit"])]
        assert cells[1].startswith(f"{np.median(final):.1e}")
        assert cells[3] == f"{sum(e <= 1e-4 for e in final)}/2"
        assert row["median_curves"]["extrapolation"][-1] == np.median(final)
        # Snapped where verified, else the trained copy's own error.
        snapped = row["snapped"]
        for verified, error, trained in zip(
            snapped["verified"], snapped["extrapolation"], final, strict=True
        ):
            assert error <= 1e-4 if verified else error == pytest.approx(trained)
    assert (tmp_path / "fc.png").stat().st_size > 1000  # beside the JSON
    assert not (tmp_path / "ckpt").exists()
    # TensorBoard: a run per model, each seed's loss and errors per evaluation.
    tags = {
        "loss", "interpolation_median", "extrapolation_median",
        *(f"seed_{s}_loss" for s in (0, 1)),
        *(f"{split}/seed_{s}" for split in ("interpolation", "extrapolation")
          for s in (0, 1)),
    }  # fmt: skip
    scalars = tensorboard_scalars(tmp_path / "tb")
    assert set(scalars) == {f"{op}/{unit}" for op, unit in names}
    for run in scalars.values():
        assert run == dict.fromkeys(tags, [4, 8])  # 256 / 64 steps an epoch
