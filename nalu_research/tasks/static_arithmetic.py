"""The static arithmetic task of Trask et al. (2018), Section 4.1, Appendix B."""

import itertools
import numbers

import keras
import numpy as np

from keras_nalu import validation

OPERATIONS = {
    "add": lambda a, b: a + b,
    "sub": lambda a, b: a - b,
    "mul": lambda a, b: a * b,
    "div": lambda a, b: a / b,
    "square": lambda a, b: a * a,
    "sqrt": lambda a, b: a**0.5,
}  # plain arithmetic: works on NumPy arrays and on tensors alike

SYMBOLS = {
    "add": "a+b", "sub": "a-b", "mul": "a*b",
    "div": "a/b", "square": "a^2", "sqrt": "sqrt(a)",
}  # fmt: skip

SPLITS = ("train", "interpolation", "extrapolation")

# Table 1 of the paper (static task), on its scale: (interpolation,
# extrapolation) per model ("relu6", "linear" for its "None", "nac", "nalu").
PAPER_TABLE_1 = {
    "relu6": {
        "add": (0.2, 42.6), "sub": (0.0, 29.0), "mul": (3.2, 10.1),
        "div": (4.2, 37.2), "square": (0.7, 47.0), "sqrt": (0.5, 10.3),
    },
    "linear": {
        "add": (0.0, 0.0), "sub": (0.0, 0.0), "mul": (20.9, 29.5),
        "div": (35.0, 52.3), "square": (4.3, 25.1), "sqrt": (2.2, 20.0),
    },
    "nac": {
        "add": (0.0, 0.0), "sub": (0.0, 0.0), "mul": (21.4, 33.3),
        "div": (37.1, 61.3), "square": (22.4, 53.3), "sqrt": (3.6, 16.4),
    },
    "nalu": {
        "add": (0.0, 0.0), "sub": (0.0, 0.0), "mul": (0.0, 0.0),
        "div": (5.3, 0.7), "square": (0.0, 0.0), "sqrt": (0.0, 0.0),
    },
}  # fmt: skip


# Madsen & Johansen's published per-seed results on this task (100 seeds, 5M
# iterations, the strict criterion): the fraction of seeds solved by each
# iteration, per model of `nalu_research.seed_batched.UNIT_MODELS` and
# operation. Every unit solved a/b on none of its seeds.
MADSEN_JOHANSEN_SOLVED_BY = {
    "nau": {"add": {50_000: 0.94, 200_000: 0.94, 1_000_000: 0.94,
                    2_000_000: 0.97, 5_000_000: 1.00}},
    "nmu": {"mul": {50_000: 0.0, 200_000: 0.0, 1_000_000: 0.0,
                    2_000_000: 0.92, 5_000_000: 0.98},
            "div": {50_000: 0.0, 200_000: 0.0, 1_000_000: 0.0,
                    2_000_000: 0.0, 5_000_000: 0.0}},
}  # fmt: skip


class StaticArithmetic:
    """Learn `op(a, b)` where `a`, `b` are sums over two fixed slices of `x`.

    `x` has `input_size` elements drawn uniformly from a range; `a` and `b`
    are the sums of two slices of `subset_ratio * input_size` elements that
    overlap in `overlap_ratio` of their length. Where the pair of slices
    starts is drawn once from `seed` and then fixed for every sample of the
    task, as the paper requires ("random (but consistent) subsections").
    Defaults follow Madsen & Johansen (2020), who made the paper's protocol
    precise: 100 inputs, slices of 25 overlapping in 12, training and
    interpolation on U[1, 2], extrapolation on U[2, 6].

    Args:
        operation: One of `OPERATIONS`: "add", "sub", "mul", "div",
            "square" (a^2) or "sqrt" (sqrt(a)).
        input_size: Length of `x`.
        subset_ratio: Length of each slice, as a fraction of `input_size`.
        overlap_ratio: Shared length of the two slices, as a fraction of the
            slice length.
        interpolation_range: `(low, high)` of the training and interpolation
            inputs.
        extrapolation_range: `(low, high)` of the extrapolation inputs, or a
            union of intervals, e.g. `((-6, -2), (2, 6))` for signed inputs.
        seed: Fixes the slices.

    Example:

    >>> from nalu_research.tasks import StaticArithmetic
    >>> task = StaticArithmetic("mul", seed=0)
    >>> x, y = task.sample(4, "extrapolation", seed=1)
    >>> x.shape, y.shape
    ((4, 100), (4, 1))
    """

    def __init__(
        self,
        operation="mul",
        input_size=100,
        subset_ratio=0.25,
        overlap_ratio=0.5,
        interpolation_range=(1.0, 2.0),
        extrapolation_range=(2.0, 6.0),
        seed=0,
    ):
        self.operation = validation.one_of("operation", operation, OPERATIONS)
        self.input_size = validation.positive_int("input_size", input_size)
        self.subset_ratio = _fraction("subset_ratio", subset_ratio, low=0.0)
        self.overlap_ratio = _fraction("overlap_ratio", overlap_ratio)
        self.interpolation_range = check_range(
            "interpolation_range", interpolation_range
        )
        self.extrapolation_range = check_range(
            "extrapolation_range", extrapolation_range, union=True
        )
        self.seed = seed

        subset = max(1, int(self.subset_ratio * self.input_size))
        overlap = int(self.overlap_ratio * subset)
        span = 2 * subset - overlap
        if span > self.input_size:
            raise ValueError(
                "Received subset_ratio and overlap_ratio whose two slices need "
                f"{span} inputs, expected at most input_size={self.input_size}. "
                f"Received: subset_ratio={subset_ratio}, "
                f"overlap_ratio={overlap_ratio}"
            )
        start = int(np.random.default_rng(seed).integers(0, self.input_size - span + 1))
        self.a_slice = slice(start, start + subset)
        self.b_slice = slice(start + subset - overlap, start + span)

    def targets(self, x):
        """`op(a, b)` for inputs `x` of shape `(..., input_size)`, as `(..., 1)`."""
        x = np.asarray(x, dtype=np.float64)
        a = x[..., self.a_slice].sum(axis=-1)
        b = x[..., self.b_slice].sum(axis=-1)
        return OPERATIONS[self.operation](a, b)[..., None]

    def sample(self, n, split="train", seed=None):
        """`n` fresh examples `(x, y)` of a split, float32, reproducible by `seed`.

        "train" and "interpolation" draw from `interpolation_range`,
        "extrapolation" from `extrapolation_range`.
        """
        validation.one_of("split", split, SPLITS)
        n = validation.positive_int("n", n)
        value_range = (
            self.extrapolation_range
            if split == "extrapolation"
            else self.interpolation_range
        )
        rng = np.random.default_rng(seed)
        x = draw_uniform(rng, value_range, (n, self.input_size))
        return x.astype(np.float32), self.targets(x).astype(np.float32)

    def training_batches(self, batch_size=128, steps=1000, seed=0, start=0):
        """A `keras.utils.PyDataset` of `steps` fresh training batches.

        Batch `i` is drawn from the seed `(seed, start + i)`, so the stream is
        the same on every run and in any worker order, and training in chunks
        (`start=0`, then `start=steps`, ...) sees the batches of one long run.
        Pass it to `model.fit(..., shuffle=False)`: by default Keras shuffles
        the order of a dataset's batches with Python's global `random`.
        """
        return FreshBatches(self, batch_size, steps, seed, start)


class FreshBatches(keras.utils.PyDataset):
    def __init__(self, task, batch_size, steps, seed, start=0):
        super().__init__()
        self.task = task
        self.batch_size = validation.positive_int("batch_size", batch_size)
        self.steps = validation.positive_int("steps", steps)
        self.seed = seed
        self.start = validation.non_negative_int("start", start)

    def __len__(self):
        return self.steps

    def __getitem__(self, index):
        seed = (self.seed, self.start + index)
        return self.task.sample(self.batch_size, "train", seed=seed)


def _fraction(name, value, low=None):
    """`value` as a float in [0, 1], or in (low, 1] when `low` is given."""
    ok = isinstance(value, numbers.Real) and not isinstance(value, (bool, np.bool_))
    ok = ok and (value > low if low is not None else value >= 0) and value <= 1
    if not ok:
        bounds = "[0, 1]" if low is None else f"({low:g}, 1]"
        raise ValueError(
            f"Received an invalid value for `{name}`, expected a number in "
            f"{bounds}. Received: {name}={value!r}"
        )
    return float(value)


def _is_interval(value):
    pair = isinstance(value, (tuple, list, np.ndarray)) and np.shape(value) == (2,)
    pair = pair and all(
        isinstance(v, numbers.Real) and not isinstance(v, (bool, np.bool_))
        for v in value
    )
    return pair and value[0] < value[1]


def check_range(name, value, union=False):
    """`value` as `(low, high)`; with `union`, also a sequence of disjoint
    intervals `((low, high), ...)`, returned sorted."""
    if _is_interval(value):
        return (float(value[0]), float(value[1]))
    ok = union and isinstance(value, (tuple, list)) and len(value) > 0
    ok = ok and all(_is_interval(v) for v in value)
    intervals = sorted((float(lo), float(hi)) for lo, hi in value) if ok else []
    ok = ok and all(a[1] <= b[0] for a, b in itertools.pairwise(intervals))
    if not ok:
        expected = "a pair (low, high) with low < high"
        if union:
            expected += ", or a sequence of such pairs that do not overlap"
        raise ValueError(
            f"Received an invalid value for `{name}`, expected {expected}. "
            f"Received: {name}={value!r}"
        )
    return tuple(intervals)


def describe_range(value_range):
    """`U[lo, hi]`, or a union of them: `U[-10, -1] u U[1, 10]`.

    >>> describe_range(((-10, -1), (1, 10)))
    'U[-10, -1] u U[1, 10]'
    """
    value_range = check_range("value_range", value_range, union=True)
    if np.ndim(value_range) == 1:
        return f"U[{value_range[0]:g}, {value_range[1]:g}]"
    return " u ".join(describe_range(part) for part in value_range)


def draw_uniform(rng, value_range, size):
    """Uniform samples over `(low, high)` or a union of such intervals.

    Over a union, each sample falls in an interval with probability
    proportional to its length, so the density is flat over the union.
    """
    if np.ndim(value_range) == 1:
        return rng.uniform(*value_range, size=size)
    lows, highs = np.asarray(value_range).T  # sorted, disjoint
    ends = np.cumsum(highs - lows)  # the union laid end to end: [0, ends[-1])
    u = rng.uniform(0.0, ends[-1], size=size)
    which = np.minimum(np.searchsorted(ends, u, side="right"), len(ends) - 1)
    return lows[which] + u - (ends[which] - (highs - lows)[which])
