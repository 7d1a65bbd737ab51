import numpy as np
import pytest

from nalu_research.tasks import (
    StaticArithmetic,
    mean_interval,
    mean_squared_error,
    metrics,
    mistry_threshold,
    paper_scale,
    sparsity_error,
    success_threshold,
    wilson_interval,
)
from nalu_research.tasks.static_arithmetic import MISTRY_RANGES, TWO_INPUTS_TASK


def test_mean_squared_error_by_hand():
    assert mean_squared_error([[1.0], [2.0]], [[2.0], [4.0]]) == pytest.approx(2.5)


def test_mean_squared_error_rejects_mismatched_shapes():
    with pytest.raises(
        ValueError, match="y_true.shape=\\(2,\\), y_pred.shape=\\(2, 1\\)"
    ):
        mean_squared_error([1.0, 2.0], [[1.0], [2.0]])


def test_paper_scale_is_percent_of_random_error():
    assert paper_scale(0.5, 2.0) == pytest.approx(25.0)
    assert paper_scale(4.0, 2.0) == pytest.approx(200.0)


@pytest.mark.parametrize("random_error", [0.0, -1.0, float("nan"), float("inf")])
def test_paper_scale_rejects_non_positive_random_error(random_error):
    with pytest.raises(ValueError, match="`random_error`"):
        paper_scale(1.0, random_error)


# Madsen & Johansen (2020) simulate the threshold with slices of 26 inputs
# overlapping in 13 (R's inclusive ranges): subset_ratio=0.26 builds the same.
PUBLISHED_THRESHOLDS = {
    "add": 1.48e-5,
    "sub": 1.38e-8,
    "mul": 0.160,
    "div": 4.9e-12,
    "square": 0.159,
    "sqrt": 9.0e-9,
}


@pytest.mark.parametrize("operation, published", PUBLISHED_THRESHOLDS.items())
def test_success_threshold_reproduces_the_published_simulation(operation, published):
    task = StaticArithmetic(operation, subset_ratio=0.26)
    assert task.a_slice.stop - task.a_slice.start == 26
    threshold = success_threshold(task, samples=200_000)
    assert threshold == pytest.approx(published, rel=0.03)


def test_success_threshold_follows_the_tasks_own_slices():
    # Our default slices have 25 inputs: fewer off-slice weights, a larger
    # threshold for a+b than the published one, computed rather than copied.
    ours = success_threshold(StaticArithmetic("add"), samples=200_000)
    assert ours == pytest.approx(1.60e-5, rel=0.03)


def test_success_threshold_is_reproducible_by_seed_and_simulated_once(monkeypatch):
    task = StaticArithmetic("mul")
    first = success_threshold(task, samples=1000, seed=3)
    assert first == metrics._simulated_threshold(task, 1e-5, 1000, 3)  # afresh
    assert success_threshold(task, samples=1000, seed=4) != first
    calls = []
    monkeypatch.setattr(
        metrics, "_simulated_threshold", lambda *args: calls.append(args) or 0.0
    )
    # An equal task (another object) is not simulated again ...
    assert success_threshold(StaticArithmetic("mul"), samples=1000, seed=3) == first
    assert calls == []
    # ... one that differs in anything the threshold depends on is.
    for other in [
        StaticArithmetic("mul", extrapolation_range=(2.0, 5.0)),
        StaticArithmetic("mul", seed=1),  # other slices
        StaticArithmetic("div"),
    ]:
        assert success_threshold(other, samples=1000, seed=3) == 0.0
    assert len(calls) == 3


@pytest.mark.parametrize(
    "successes, trials, low, high",
    [(0, 25, 0.0, 0.1332), (25, 25, 0.8668, 1.0), (5, 10, 0.2366, 0.7634),
     (14, 100, 0.0853, 0.2214)],
)  # fmt: skip
def test_wilson_interval_by_hand(successes, trials, low, high):
    got = wilson_interval(successes, trials)
    assert got == pytest.approx((low, high), abs=1e-4)


@pytest.mark.parametrize("trials", [1, 5, 25, 100])
def test_wilson_interval_contains_the_rate_exactly_at_the_ends(trials):
    # The plot's error bars are rate - low and high - rate: never negative.
    assert wilson_interval(0, trials)[0] == 0.0
    assert wilson_interval(trials, trials)[1] == 1.0
    for successes in range(trials + 1):
        low, high = wilson_interval(successes, trials)
        assert low <= successes / trials <= high


@pytest.mark.parametrize("successes, trials", [(-1, 5), (6, 5), (0, 0)])
def test_wilson_interval_rejects_invalid_counts(successes, trials):
    with pytest.raises(ValueError, match=f"successes={successes}, trials={trials}"):
        wilson_interval(successes, trials)


def test_sparsity_error_by_hand():
    assert sparsity_error([[1.0, -1.0], [0.0, 0.0]]) == 0.0
    assert sparsity_error([[0.9, -0.02], [0.4, 1.0]]) == pytest.approx(0.4)


def test_sparsity_error_is_against_the_units_own_exact_values():
    # An exact kernel of a unit whose exponents may be 2 scores 0, not the worst.
    assert sparsity_error([2.0, -1.0, 0.0], (0.0, 1.0, 2.0, -1.0)) == 0.0
    assert sparsity_error([2.0, -1.0, 0.0]) == 1.0  # against {-1, 0, 1}
    # In units of the gap around the weight: 0.5 is halfway between two.
    assert sparsity_error([1.5], (0.0, 1.0, 3.0)) == pytest.approx(0.25)
    assert sparsity_error([0.25], (0.0, 0.5)) == pytest.approx(0.5)
    assert sparsity_error([4.0], (0.0, 1.0, 3.0)) == pytest.approx(0.5)
    assert sparsity_error([0.3], (0.0,)) == pytest.approx(0.3)
    with pytest.raises(ValueError, match="`exact_values`"):
        sparsity_error([0.3], ())


def test_success_threshold_of_an_expression_simulates_its_perturbed_solution():
    add = success_threshold(StaticArithmetic("add"), samples=20_000)
    double = success_threshold(StaticArithmetic("2*a + 2*b"), samples=20_000)
    assert double == pytest.approx(4 * add, rel=1e-9)  # the error doubles


@pytest.mark.research
def test_mean_interval_by_hand():
    # mean 2, sample sd 1, n 3: t(0.975, 2) = 4.3027, half = 4.3027 / sqrt(3).
    low, high = mean_interval([1.0, 2.0, 3.0])
    assert (low, high) == pytest.approx((2 - 2.48417, 2 + 2.48417), abs=1e-4)


@pytest.mark.research
@pytest.mark.parametrize("values", [[1.0], [], [1.0, float("nan")], [[1.0, 2.0]]])
def test_mean_interval_rejects_too_few_or_invalid_values(values):
    with pytest.raises(ValueError, match="`values`"):
        mean_interval(values)


# Mistry et al.'s threshold (their generate_exp_thresholds.r) of three rows of
# their exp_setups.csv at its epsilon 1e-05, each checked by hand before it
# was written here: add on U[-40, -20] is eps^2 (2 E x^2 + 2 (E|x|)^2) with E
# x^2 = 2800/3 and E|x| = 30; div on U[0.2, 2] is (2 eps / (1 + eps))^2 E x^2
# E x^-2 = 4e-10 * 1.48 * 2.5 / (1 + eps)^2; mul on U[2, 6] is (2 eps -
# eps^2)^2 (E x^2)^2 with E x^2 = 52/3; and each also by a Monte Carlo of
# their formulas on 2e6 draws, written apart from the package.
@pytest.mark.parametrize(
    "operation, extrapolation, expected",
    [
        ("add", (-40.0, -20.0), 3.667e-07),
        ("div", (0.2, 2.0), 1.480e-09),
        ("mul", (2.0, 6.0), 1.202e-07),
    ],
)
def test_mistry_threshold_of_rows_of_their_exp_setups(
    operation, extrapolation, expected
):
    task = StaticArithmetic(
        operation, extrapolation_range=extrapolation, **TWO_INPUTS_TASK
    )
    assert mistry_threshold(task) == pytest.approx(expected, rel=1e-3)
    # Thresholds scale as epsilon^2 (their generator's 1e-4: 100 times).
    assert mistry_threshold(task, epsilon=1e-4) == pytest.approx(
        100 * expected, rel=2e-3
    )


@pytest.mark.parametrize("operation", metrics.MISTRY_OPERATIONS)
@pytest.mark.parametrize("index", [0, 4, 5])  # negative, mirrored, straddling 1
@pytest.mark.parametrize("input_size", [2, 10])  # with 8 irrelevant inputs
def test_mistry_threshold_closed_form_agrees_with_their_simulation(
    operation, index, input_size
):
    """The exact value where a and b are single inputs, against the Monte
    Carlo of their `simulate.mse` (which the closed form replaces there)."""
    task = StaticArithmetic(
        operation,
        input_size=input_size,
        subset_ratio=1 / input_size,
        overlap_ratio=0.0,
        extrapolation_range=MISTRY_RANGES[index][1],
        seed=3,
    )
    simulated = metrics._simulated_mistry(task, 1e-5, 400_000, seed=0)
    assert mistry_threshold(task) == pytest.approx(simulated, rel=0.03)


def test_mistry_threshold_simulates_wider_slices_and_refuses_other_targets():
    wide = StaticArithmetic("mul", input_size=4, subset_ratio=0.5, overlap_ratio=0.0)
    value = mistry_threshold(wide, samples=100_000, seed=5)
    assert value == metrics._simulated_mistry(wide, 1e-5, 100_000, 5)
    # a, b sums of two inputs on U[2, 6]: (2 eps - eps^2)^2 (E (x+y)^2)^2.
    second = 2 * 52 / 3 + 2 * 16
    assert value == pytest.approx((2e-5 - 1e-10) ** 2 * second**2, rel=0.03)
    with pytest.raises(ValueError, match="`task`.*'add', 'sub', 'mul', 'div'"):
        mistry_threshold(StaticArithmetic("square"))
    with pytest.raises(ValueError, match="`epsilon`.*Received: epsilon=0"):
        mistry_threshold(wide, epsilon=0)
    assert np.isfinite(mistry_threshold(wide, epsilon=0.5, samples=1000))
