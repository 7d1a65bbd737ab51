import json
import sys
from pathlib import Path

import numpy as np
import pytest

from nalu_research.tasks.program_evaluation import (
    TOKENS,
    ProgramEvaluation,
    digit_accuracy,
    program_text,
    run_program,
)
from tests.processes import (
    checkpoint_epoch,
    example_env,
    kill_when_written,
    run_command_in_process,
    tensorboard_scalars,
)

EXAMPLE = Path(__file__).resolve().parents[1] / "examples" / "program_evaluation.py"


@pytest.mark.parametrize(
    "tokens, values, expected",
    [
        (["SET", "ADD"], [12, 30], 42),
        (["SET", "SUB"], [12, 30], -18),
        # 37 + 52 = 89 is not < 61: the else branch adds 9.
        (["SET", "ADD", "IF_LT", "THEN_SUB", "ELSE_ADD"], [37, 52, 61, 8, 9], 98),
        # 37 - 52 = -15 < 61: the then branch subtracts 8.
        (["SET", "SUB", "IF_LT", "THEN_SUB", "ELSE_ADD"], [37, 52, 61, 8, 9], -23),
        # 50 + 50 = 100 > 99: then adds 1000.
        (["SET", "ADD", "IF_GT", "THEN_ADD", "ELSE_SUB"], [50, 50, 99, 1000, 7], 1100),
        # 100 is not > 100 (strict): else subtracts 7.
        (["SET", "ADD", "IF_GT", "THEN_ADD", "ELSE_SUB"], [50, 50, 100, 1000, 7], 93),
    ],
)
def test_known_programs(tokens, values, expected):
    assert run_program(tokens, values) == expected


def test_program_text():
    text = program_text(
        ["SET", "ADD", "IF_LT", "THEN_SUB", "ELSE_ADD"], [37, 52, 61, 8, 9]
    )
    assert text == (
        "a = 37; a = a + 52; if a < 61: a = a - 8; else: a = a + 9; print(a)"
    )


def test_invalid_programs_raise():
    with pytest.raises(ValueError, match="before an IF"):
        run_program(["SET", "THEN_ADD"], [1, 2])
    with pytest.raises(ValueError, match="invalid token.*'MUL'"):
        run_program(["SET", "MUL"], [1, 2])


@pytest.mark.parametrize(
    "split, low, high", [("train", 0, 100), ("validation", 100, 1000),
                         ("test", 1000, 10000)]
)  # fmt: skip
@pytest.mark.parametrize("task", ["addition", "program"])
def test_splits_draw_integers_of_their_digit_count(task, split, low, high):
    generator = ProgramEvaluation(task)
    tokens, values = generator.programs(2000, split, seed=0)
    assert values.min() >= low and values.max() < high
    assert values.min() < low + (high - low) // 20  # spread over the range
    assert values.max() >= high - (high - low) // 20
    assert len(tokens) == 2000 and all(len(t) == generator.steps for t in tokens)


def test_programs_cover_every_token_and_both_branches():
    generator = ProgramEvaluation("program")
    tokens, values = generator.programs(500, "train", seed=1)
    assert {t for program in tokens for t in program} == set(TOKENS)
    taken = []
    for program, vals in zip(tokens, values, strict=True):
        a = run_program(program[:2], vals[:2])
        taken.append(a < vals[2] if program[2] == "IF_LT" else a > vals[2])
    assert 0.2 < np.mean(taken) < 0.8


def test_sample_encodes_values_and_one_hot_tokens():
    generator = ProgramEvaluation("program")
    x, y = generator.sample(50, "validation", seed=3)
    tokens, values = generator.programs(50, "validation", seed=3)
    assert x.shape == (50, 5, 1 + len(TOKENS)) and x.dtype == np.float32
    np.testing.assert_array_equal(x[..., 0], values)
    np.testing.assert_array_equal(x[..., 1:].sum(-1), 1.0)
    for i in range(50):
        decoded = [TOKENS[j] for j in x[i, :, 1:].argmax(-1)]
        assert decoded == list(tokens[i])
        assert y[i] == run_program(decoded, x[i, :, 0].astype(int))


def test_addition_task_adds_two_integers():
    x, y = ProgramEvaluation("addition").sample(10, "test", seed=0)
    assert x.shape == (10, 2, 1 + len(TOKENS))
    np.testing.assert_array_equal(y, x[:, 0, 0] + x[:, 1, 0])


def test_samples_are_fixed_by_the_seed():
    generator = ProgramEvaluation()
    a, b, c = (generator.sample(5, "train", seed=s)[0] for s in (1, 1, 2))
    assert np.array_equal(a, b) and not np.array_equal(a, c)


@pytest.mark.parametrize(
    "y_true, y_pred, expected",
    [
        ([1234], [1234.4], 100.0),
        ([1234], [1235.0], 75.0),  # the units digit differs
        ([1234], [234.0], 75.0),  # a missing leading digit never matches
        ([99], [100.0], 0.0),  # 3 positions, none match
        ([-42], [42.0], 2 / 3 * 100),  # the sign counts as a digit
        ([-42], [-42.2], 100.0),
        ([5, 1000], [5.0, np.nan], 20.0),  # NaN matches nothing: 1 of 5 digits
    ],
)
def test_digit_accuracy_by_hand(y_true, y_pred, expected):
    assert digit_accuracy(y_true, y_pred) == pytest.approx(expected)


def test_digit_accuracy_rejects_mismatched_sizes():
    with pytest.raises(ValueError, match="different sizes"):
        digit_accuracy([1, 2], [1.0])


def test_invalid_arguments_raise():
    with pytest.raises(ValueError, match="`task`.*task='multiply'"):
        ProgramEvaluation("multiply")
    with pytest.raises(ValueError, match="`split`.*split='4-digit'"):
        ProgramEvaluation().programs(3, "4-digit")
    with pytest.raises(ValueError, match="`n`.*n=0"):
        ProgramEvaluation().sample(0)


def test_decode_inverts_encode():
    generator = ProgramEvaluation("program")
    tokens, values = generator.programs(20, "test", seed=5)
    decoded_tokens, decoded_values = generator.decode(generator.encode(tokens, values))
    assert decoded_tokens == [tuple(t) for t in tokens]
    np.testing.assert_array_equal(decoded_values, values)


@pytest.mark.processes
@pytest.mark.research  # plots with matplotlib
def test_example_killed_mid_run_resumes_to_the_uninterrupted_results(tmp_path):
    """Under a MirroredStrategy over the local CPU: a run killed after its
    first checkpoint (one per epoch of 10 steps) and run again resumes there
    and ends with the curves and accuracies of an uninterrupted run."""

    def command(name):
        return [sys.executable, str(EXAMPLE), "--seeds", "1", "--models", "lstm",
                "--steps", "100", "--eval-every", "10", "--eval-size", "50",
                "--strategy", "mirrored", "--png", str(tmp_path / f"{name}.png"),
                "--json", str(tmp_path / f"{name}.json"),
                "--checkpoint-dir", str(tmp_path / f"{name}_checkpoints")]  # fmt: skip

    env = example_env()
    whole = run_command_in_process(
        [*command("whole"), "--tensorboard", str(tmp_path / "tb")]
    )
    assert whole.returncode == 0, whole.stderr[-3000:]
    assert not (tmp_path / "whole_checkpoints").exists()  # cleaned up when done
    # Not a terminal: a progress line per evaluation (epoch), naming its step,
    # the digits correct and the time left, then one per run.
    lines = [line for line in whole.stdout.splitlines() if line.startswith("epoch ")]
    assert [line.split(" - ")[0] for line in lines] == [
        f"epoch {e}/10 (step {10 * e})" for e in range(1, 11)
    ]
    assert " - test_digits " in lines[0] and "left" in lines[0]
    assert lines[-1].endswith(", done")
    assert "run 1/1 (LSTM, seed 1) - train digits " in whole.stdout
    # TensorBoard: the loss and the digit accuracies, against the step.
    scalars = tensorboard_scalars(tmp_path / "tb")
    assert set(scalars) == {"lstm/1"}
    assert set(scalars["lstm/1"]) == {
        "loss", "train_digits", "validation_digits", "test_digits"
    }  # fmt: skip
    for steps in scalars["lstm/1"].values():
        assert steps == list(range(10, 101, 10))

    state = tmp_path / "killed_checkpoints" / "program" / "lstm" / "1"
    kill_when_written(command("killed"), state, env)
    killed_at = checkpoint_epoch(state)  # epochs completed
    assert 0 < killed_at < 10 and not (tmp_path / "killed.json").exists()

    resumed = run_command_in_process(command("killed"))
    assert resumed.returncode == 0, resumed.stderr[-3000:]
    assert f"resumed from its checkpoint after epoch {killed_at}" in resumed.stdout
    assert not (tmp_path / "killed_checkpoints").exists()

    def results(name):
        runs = json.loads((tmp_path / f"{name}.json").read_text())["results"]
        return [
            {k: v for k, v in run.items() if k != "seconds"} for run in runs["LSTM"]
        ]

    expected = results("whole")
    assert expected[0]["steps"] == list(range(10, 101, 10))
    assert results("killed") == expected


def _run(steps, values):
    return {
        "steps": steps,
        "curves": {s: values for s in ("train", "validation", "test")},
    }


def test_seed_curves_align_a_diverged_run_with_nan():
    from nalu_research.experiments.program_evaluation import seed_curves

    runs = [
        _run([50, 100, 150], [90.0, 99.0, 100.0]),
        _run([50, 100], [80.0, 1.0]),  # diverged: evaluated where it stopped
        _run([50, 100, 150], [70.0, 98.0, 97.0]),
    ]
    steps, curves = seed_curves(runs, "test")
    np.testing.assert_array_equal(steps, [50, 100, 150])
    np.testing.assert_array_equal(
        curves, [[90, 99, 100], [80, 1, np.nan], [70, 98, 97]]
    )


@pytest.mark.research  # plots with matplotlib
def test_plot_draws_a_diverged_run(tmp_path):
    from types import SimpleNamespace

    from nalu_research.experiments.program_evaluation import (
        ProgramEvaluationExperiment,
    )
    from nalu_research.monitoring import pyplot, save_png

    runs = [_run([50, 100, 150], [90.0, 99.0, 100.0]), _run([50], [1.0])]
    rows = [{"model": "NALU", **run} for run in runs]
    args = SimpleNamespace(task="program")
    figure = ProgramEvaluationExperiment().plot(args, rows, pyplot())
    save_png(figure, tmp_path / "curves.png")
    assert (tmp_path / "curves.png").stat().st_size > 1000
