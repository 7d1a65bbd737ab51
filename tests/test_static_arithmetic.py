import keras
import numpy as np
import pytest

from nalu_research.experiments.static_arithmetic import (
    METRICS,
    SPLITS,
    error_metrics,
    split_mse,
)
from nalu_research.tasks import OPERATIONS, StaticArithmetic
from nalu_research.tasks.static_arithmetic import TARGETS, draw_uniform, parse_target


def test_slices_are_fixed_by_the_seed_and_follow_the_protocol():
    task = StaticArithmetic("add", seed=3)
    again = StaticArithmetic("mul", seed=3)
    assert (task.a_slice, task.b_slice) == (again.a_slice, again.b_slice)
    a, b = task.a_slice, task.b_slice
    assert a.stop - a.start == 25 and b.stop - b.start == 25
    assert a.stop - b.start == 12  # overlap
    assert 0 <= a.start and b.stop <= 100
    offsets = {StaticArithmetic(seed=s).a_slice.start for s in range(20)}
    assert len(offsets) > 5  # the offset is drawn per seed


def test_every_sample_of_a_task_uses_the_same_slices():
    task = StaticArithmetic("add", seed=0)
    x = np.zeros((1, 100), "float32")
    x[0, task.a_slice] = 1.0
    x[0, task.b_slice] += 10.0
    a, b = 25.0, 250.0  # x[a] = 1, or 11 on the overlap
    a += 12 * 10.0
    b += 12 * 1.0
    np.testing.assert_allclose(task.targets(x), [[a + b]])
    for seed in range(3):
        x, y = task.sample(16, "train", seed=seed)
        np.testing.assert_allclose(
            y[:, 0],
            x[:, task.a_slice].sum(1) + x[:, task.b_slice].sum(1),
            rtol=1e-5,
        )


@pytest.mark.parametrize(
    "operation, expected",
    [("add", 5.0), ("sub", -1.0), ("mul", 6.0), ("div", 2 / 3), ("square", 4.0),
     ("sqrt", np.sqrt(2.0))],
)  # fmt: skip
def test_operations_by_hand(operation, expected):
    task = StaticArithmetic(operation, input_size=4, subset_ratio=0.25, overlap_ratio=0)
    x = np.zeros((1, 4))
    x[0, task.a_slice] = 2.0
    x[0, task.b_slice] = 3.0
    np.testing.assert_allclose(task.targets(x), [[expected]])


def test_extrapolation_inputs_and_sums_lie_outside_the_training_range():
    task = StaticArithmetic("mul", seed=0)
    x_train, _ = task.sample(2000, "train", seed=1)
    x_interp, _ = task.sample(2000, "interpolation", seed=2)
    x_extrap, _ = task.sample(2000, "extrapolation", seed=3)
    assert x_train.min() >= 1 and x_train.max() <= 2
    assert x_interp.min() >= 1 and x_interp.max() <= 2
    assert x_extrap.min() >= 2 and x_extrap.max() <= 6
    a_train = x_train[:, task.a_slice].sum(1)
    a_extrap = x_extrap[:, task.a_slice].sum(1)
    assert a_extrap.min() > a_train.max()


def test_samples_and_batches_are_reproducible_and_fresh():
    task = StaticArithmetic("mul", seed=0)
    np.testing.assert_array_equal(task.sample(4, seed=7)[0], task.sample(4, seed=7)[0])
    batches = task.training_batches(batch_size=8, steps=3, seed=5)
    assert len(batches) == 3
    x0, y0 = batches[0]
    assert x0.shape == (8, 100) and y0.shape == (8, 1) and x0.dtype == np.float32
    np.testing.assert_array_equal(x0, task.training_batches(8, 3, seed=5)[0][0])
    assert not np.array_equal(x0, batches[1][0])
    # Chunks of a stream are the stream: batch 2 is batch 0 of the chunk at 2.
    later = task.training_batches(8, 1, seed=5, start=2)
    np.testing.assert_array_equal(later[0][0], batches[2][0])
    with pytest.raises(ValueError, match="`start`"):
        task.training_batches(8, 1, seed=5, start=-1)


@pytest.mark.parametrize(
    "kwargs, message",
    [
        ({"operation": "pow"}, "`operation`.*operation='pow'"),
        ({"input_size": 0}, "`input_size`.*input_size=0"),
        ({"subset_ratio": 0}, r"`subset_ratio`.*\(0, 1\].*subset_ratio=0"),
        ({"overlap_ratio": 1.5}, r"`overlap_ratio`.*\[0, 1\].*overlap_ratio=1.5"),
        ({"subset_ratio": 0.8}, "need 120 inputs.*input_size=100"),
        ({"interpolation_range": (2, 1)}, "`interpolation_range`.*low < high"),
        ({"extrapolation_range": "26"}, "`extrapolation_range`.*low < high"),
        (
            {"extrapolation_range": ((-6, -1), (-2, 6))},
            "`extrapolation_range`.*do not overlap",
        ),
        ({"interpolation_range": ((-6, -2), (2, 6))}, "`interpolation_range`.*high. R"),
    ],
)
def test_invalid_arguments_raise(kwargs, message):
    with pytest.raises(ValueError, match=message):
        StaticArithmetic(**kwargs)


def test_numpy_arguments_are_accepted():
    task = StaticArithmetic(
        "add",
        subset_ratio=np.float32(0.25),
        overlap_ratio=np.float64(0.5),
        interpolation_range=np.array([1.0, 2.0]),
        extrapolation_range=(np.float32(2), np.float32(6)),
    )
    assert task.interpolation_range == (1.0, 2.0)
    assert task.extrapolation_range == (2.0, 6.0)


def test_invalid_split_raises():
    with pytest.raises(ValueError, match="`split`.*split='test'"):
        StaticArithmetic().sample(4, "test")


def test_operations_are_the_papers_six():
    assert sorted(OPERATIONS) == ["add", "div", "mul", "sqrt", "square", "sub"]


def test_extrapolation_range_may_be_a_union_drawn_with_flat_density():
    task = StaticArithmetic(
        "mul", interpolation_range=(-2, 2), extrapolation_range=((2, 6), (-6, -2))
    )
    assert task.extrapolation_range == ((-6.0, -2.0), (2.0, 6.0))
    x, y = task.sample(5000, "extrapolation", seed=0)
    assert (np.abs(x) >= 2).all() and (np.abs(x) <= 6).all()
    assert (x < 0).mean() == pytest.approx(0.5, abs=0.01)
    np.testing.assert_allclose(y, task.targets(x), rtol=1e-5, atol=1e-3)


def test_draw_uniform_over_a_union_weights_intervals_by_length():
    x = draw_uniform(np.random.default_rng(0), ((0.0, 1.0), (5.0, 8.0)), (100_000,))
    assert ((x >= 0) & (x <= 1)).mean() == pytest.approx(0.25, abs=0.01)
    assert ((x >= 5) & (x <= 8)).mean() == pytest.approx(0.75, abs=0.01)
    assert not ((x > 1) & (x < 5)).any()
    one = draw_uniform(np.random.default_rng(0), (1.0, 2.0), (3,))
    np.testing.assert_array_equal(one, np.random.default_rng(0).uniform(1, 2, 3))


def test_error_metrics_are_0_for_an_exact_model_and_100_for_the_scale_model():
    """What the experiment logs after every epoch: the MSE on each test set and
    the error on the paper's scale, relative to the model setting the scale."""
    task = StaticArithmetic("add", seed=0)
    test_sets = {
        split: task.sample(500, split, seed=i) for i, split in enumerate(SPLITS)
    }
    kernel = np.zeros((100, 1), "float32")
    kernel[task.a_slice] += 1  # the overlap of the slices counts twice
    kernel[task.b_slice] += 1

    def linear(weights):
        model = keras.Sequential(
            [keras.Input((100,)), keras.layers.Dense(1, use_bias=False)]
        )
        model.layers[0].set_weights([weights])
        return model

    scale_model = linear(np.zeros_like(kernel))  # predicts 0
    scale = split_mse(scale_model, test_sets)
    for split, (_, y) in test_sets.items():
        assert scale[split] == pytest.approx(np.mean(np.square(y.astype("float64"))))
    evaluate = error_metrics(test_sets, scale)
    exact = evaluate(linear(kernel))
    assert tuple(exact) == METRICS == (
        "interpolation_error", "interpolation_mse",
        "extrapolation_error", "extrapolation_mse",
    )  # fmt: skip
    for split in SPLITS:
        assert exact[f"{split}_mse"] < 1e-6 and exact[f"{split}_error"] < 1e-7
        assert evaluate(scale_model)[f"{split}_error"] == pytest.approx(100)
    half = evaluate(linear(kernel / 2))  # off by (a + b) / 2: a quarter of 0's MSE
    for split in SPLITS:
        assert half[f"{split}_error"] == pytest.approx(25, rel=1e-5)


def test_a_target_is_any_expression_of_a_and_b():
    task = StaticArithmetic("2*a - b", seed=1)
    assert task.operation == "2*a - b"
    x, y = task.sample(64, "extrapolation", seed=0)
    x64 = x.astype(np.float64)
    a, b = x64[:, task.a_slice].sum(-1), x64[:, task.b_slice].sum(-1)
    np.testing.assert_allclose(task.targets(x)[:, 0], 2 * a - b)
    # One of the paper's operations, however it is written, is that one.
    for text in ("a*b", "b * a", "mul"):
        assert StaticArithmetic(text).operation == "mul"
    assert StaticArithmetic("a^2").operation == "square"
    assert parse_target("sqrt(a)/b").symbol == "sqrt(a)/b"
    assert parse_target("sub").symbol == "a-b"


def test_the_papers_operations_are_named_targets_computed_as_before():
    rng = np.random.default_rng(0)
    a, b = rng.uniform(-3, 3, (2, 1000))
    before = {"add": a + b, "sub": a - b, "mul": a * b, "div": a / b,
              "square": a * a, "sqrt": np.abs(a) ** 0.5}  # fmt: skip
    for name, text in TARGETS.items():
        target = parse_target(text)
        assert target.name == name and OPERATIONS[name] is not None
        got = target.numpy(np.abs(a) if name == "sqrt" else a, b)
        np.testing.assert_array_equal(got, before[name])
        tensor = target.keras(
            keras.ops.convert_to_tensor(np.abs(a) if name == "sqrt" else a, "float32"),
            keras.ops.convert_to_tensor(b, "float32"),
        )
        assert keras.ops.convert_to_numpy(tensor).shape == a.shape
    constant = parse_target("3")
    assert constant.numpy(a, b).shape == a.shape
    assert (
        keras.ops.convert_to_numpy(
            constant.keras(keras.ops.ones((2, 3)), keras.ops.ones((2, 3)))
        ).tolist()
        == [[3.0] * 3] * 2
    )


@pytest.mark.parametrize(
    "text, message",
    [
        ("2*c - b", "expected an expression of the inputs a and b only; it uses c"),
        ("a +", "it does not parse"),
        ("a == b", "it is a"),
        ("erf(a)", "it applies erf"),
        ("__import__('os')", "it uses os"),  # no Python builtins
        ("__import__(a)", "it applies __import__"),
        (3, "expected a name of ('add', 'sub'"),
    ],
)
def test_an_invalid_target_raises_naming_its_argument(text, message):
    with pytest.raises(ValueError) as error:
        StaticArithmetic(text)
    assert message in str(error.value)
    assert f"Received: operation={text!r}" in str(error.value)
