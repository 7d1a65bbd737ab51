"""The static arithmetic task of Trask et al. (2018), Section 4.1, Appendix B.

Its targets are expressions that SymPy parses (`parse_target`,
`nalu_research.tasks.targets`), imported on the first parse: importing this
module imports neither SymPy nor Keras.
"""

import functools
import itertools
import numbers

import numpy as np

from nalu_research import paper

# The paper's operations, each a target of the one mechanism (`Target`): an
# expression of the sums `a` and `b`.
# fmt: off
TARGETS = {
    "add": "a + b", "sub": "a - b", "mul": "a*b",
    "div": "a/b", "square": "a**2", "sqrt": "sqrt(a)",
}
# fmt: on

# The tables' names of the paper's operations (any other target is named by
# its expression).
# fmt: off
SYMBOLS = {
    "add": "a+b", "sub": "a-b", "mul": "a*b",
    "div": "a/b", "square": "a^2", "sqrt": "sqrt(a)",
}
# fmt: on


def parse_target(value, name="target"):
    """The `Target` (`nalu_research.tasks.targets`) of `value`: a key of
    `TARGETS` (`"mul"`), an expression of the inputs `a` and `b` (`"2*a -
    b"`, written as Python, `^` read as a power), or a `Target`.

    The expression may apply `sqrt`, `exp`, `log`, `abs`, `sin`, `cos` and
    `tanh`, and use `pi` and `E`. It is parsed by SymPy's `parse_expr`,
    which evaluates the text as Python (without Python's builtins): parse
    only expressions you wrote.

    Args:
        value: The target.
        name: The caller's argument, for errors.

    Raises:
        ValueError: `value` is not a name of `TARGETS` nor an expression of
            `a` and `b` (an `InvalidValueError` naming `name`, saying what
            is wrong: it does not parse, or uses another symbol or
            function).

    >>> parse_target("2*a - b").numpy(np.array([3.0]), np.array([1.0]))
    array([5.])
    >>> parse_target("a * b").name
    'mul'
    """
    from nalu_research.tasks.targets import parse  # SymPy: on first use

    return parse(value, name)


def _operation(key, a, b):
    return parse_target(key).numpy(a, b)


# Each paper's operation as a function of NumPy arrays (parsed on first use).
OPERATIONS = {key: functools.partial(_operation, key) for key in TARGETS}

SPLITS = ("train", "interpolation", "extrapolation")

# The nine (interpolation, extrapolation) ranges of Mistry, Farrahi & Hare's
# single-module benchmark ("A Primer for Neural Arithmetic Logic Modules",
# JMLR 2022; their script single_layer_benchmark.sh), in their order: the
# ranges of every benchmark here that follows theirs.
MISTRY_RANGES = (
    ((-20.0, -10.0), (-40.0, -20.0)),
    ((-2.0, -1.0), (-6.0, -2.0)),
    ((-1.2, -1.1), (-6.1, -1.2)),
    ((-0.2, -0.1), (-2.0, -0.2)),
    ((-2.0, 2.0), ((-6.0, -2.0), (2.0, 6.0))),
    ((0.1, 0.2), (0.2, 2.0)),
    ((1.0, 2.0), (2.0, 6.0)),
    ((1.1, 1.2), (1.2, 6.0)),
    ((10.0, 20.0), (20.0, 40.0)),
)
# Their two-input task (`--input-size 2 --subset-ratio 0.5 --overlap-ratio
# 0`): `a` and `b` are one input each, `a = x[0]` and `b = x[1]`, as
# `StaticArithmetic` keyword arguments.
TWO_INPUTS_TASK = {"input_size": 2, "subset_ratio": 0.5, "overlap_ratio": 0.0}

# Table 1 of the paper (static task), on its scale: (interpolation,
# extrapolation) per model ("relu6", "linear" for its "None", "nac", "nalu").
PAPER_TABLE_1 = paper.table("table_1_static")


# Madsen & Johansen's published per-seed results on this task (100 seeds, 5M
# iterations, the strict criterion): the fraction of seeds solved by each
# iteration, per model of `nalu_research.seed_batched.UNIT_MODELS` and
# operation. Every unit solved a/b on none of its seeds.
# fmt: off
MADSEN_JOHANSEN_SOLVED_BY = {
    "nau": {"add": {50_000: 0.94, 200_000: 0.94, 1_000_000: 0.94,
                    2_000_000: 0.97, 5_000_000: 1.00}},
    "nmu": {"mul": {50_000: 0.0, 200_000: 0.0, 1_000_000: 0.0,
                    2_000_000: 0.92, 5_000_000: 0.98},
            "div": {50_000: 0.0, 200_000: 0.0, 1_000_000: 0.0,
                    2_000_000: 0.0, 5_000_000: 0.0}},
}
# fmt: on


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
        operation: The target (`parse_target`): one of the paper's
            operations, "add", "sub", "mul", "div", "square" (a^2) or "sqrt"
            (sqrt(a)), or an expression of `a` and `b`, e.g. "2*a - b".
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
        from keras_nalu import validation

        self.target = parse_target(operation, "operation")
        self.operation = self.target.name
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
        return self.target.numpy(a, b)[..., None]

    def sample(self, n, split="train", seed=None):
        """`n` fresh examples `(x, y)` of a split, float32, reproducible by `seed`.

        "train" and "interpolation" draw from `interpolation_range`,
        "extrapolation" from `extrapolation_range`.
        """
        from keras_nalu import validation

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
        from nalu_research.tasks.batches import FreshBatches

        return FreshBatches(self, batch_size, steps, seed, start)


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


def __getattr__(name):
    if name == "FreshBatches":  # a Keras PyDataset: on first use
        from nalu_research.tasks.batches import FreshBatches

        return FreshBatches
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
