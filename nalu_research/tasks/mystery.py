"""The "mystery arithmetic" task: many outputs, each an operation on two inputs.

From the PyTorch walk-through of the paper in the reference blog posts: `n`
inputs, `m` outputs, each output `op(x_i, x_j)` for random `i != j` and a
random operation; train on U[-10, 10], test on U[-50, 50]. Inputs are signed, so
products of inputs with different signs are negative, which the NALU's
`log|x|` cannot express.

The blog leaves division out, "since we use the same interval that includes
numbers very close to zero": with a denominator uniform around 0, `a / b` has
no finite variance (`E[1 / b^2]` diverges), so neither an MSE nor the task's
simulated threshold is defined. Division is accepted on ranges that exclude
0, given as unions of intervals, e.g. `((-10, -1), (1, 10))`.
"""

import numpy as np

from nalu_research.tasks.static_arithmetic import (
    OPERATIONS,
    SYMBOLS,
    check_range,
    draw_uniform,
)

SPLITS = ("train", "test")


class MysteryArithmetic:
    """`y_k = op_k(x[i_k], x[j_k])` for `output_size` random triples.

    Args:
        input_size: Length of `x`.
        output_size: Number of outputs.
        operations: Operations to draw from (names of `OPERATIONS` that take
            two inputs: "add", "sub", "mul", "div").
        train_range: `(low, high)` of the training inputs, or a union of
            such intervals, e.g. `((-10, -1), (1, 10))`.
        test_range: The same for the test inputs. With "div" among the
            operations, neither range may contain 0.
        seed: Fixes the triples.

    Example:

    >>> from nalu_research.tasks.mystery import MysteryArithmetic
    >>> task = MysteryArithmetic(seed=0)
    >>> x, y = task.sample(5, "test", seed=1)
    >>> x.shape, y.shape
    ((5, 100), (5, 10))
    """

    def __init__(
        self,
        input_size=100,
        output_size=10,
        operations=("add", "sub", "mul"),
        train_range=(-10.0, 10.0),
        test_range=(-50.0, 50.0),
        seed=0,
    ):
        from keras_nalu import validation

        self.input_size = validation.positive_int("input_size", input_size)
        if self.input_size < 2:
            raise ValueError(
                "Received an invalid value for `input_size`, expected at least 2 "
                f"(two distinct inputs per output). Received: input_size={input_size}"
            )
        self.output_size = validation.positive_int("output_size", output_size)
        operations = tuple(operations)
        if not operations or any(
            op not in ("add", "sub", "mul", "div") for op in operations
        ):
            raise ValueError(
                "Received an invalid value for `operations`, expected a non-empty "
                "sequence of 'add', 'sub', 'mul', 'div'. "
                f"Received: operations={operations!r}"
            )
        self.operations = operations
        self.train_range = check_range("train_range", train_range, union=True)
        self.test_range = check_range("test_range", test_range, union=True)
        if "div" in operations:
            for name in ("train_range", "test_range"):
                _check_away_from_zero(name, getattr(self, name))
        self.seed = seed
        rng = np.random.default_rng(seed)
        self.configuration = []
        for _ in range(self.output_size):
            i, j = rng.choice(self.input_size, size=2, replace=False)
            self.configuration.append((int(i), int(j), str(rng.choice(operations))))

    def targets(self, x):
        """The outputs for inputs `x` of shape `(..., input_size)`."""
        x = np.asarray(x, dtype=np.float64)
        return np.stack(
            [OPERATIONS[op](x[..., i], x[..., j]) for i, j, op in self.configuration],
            axis=-1,
        )

    def sample(self, n, split="train", seed=None):
        """`n` examples `(x, y)` of a split, float32, reproducible by `seed`."""
        from keras_nalu import validation

        validation.one_of("split", split, SPLITS)
        n = validation.positive_int("n", n)
        value_range = self.train_range if split == "train" else self.test_range
        rng = np.random.default_rng(seed)
        x = draw_uniform(rng, value_range, (n, self.input_size))
        return x.astype(np.float32), self.targets(x).astype(np.float32)

    def success_threshold(self, epsilon=1e-5, samples=200_000, seed=0):
        """Test MSE of a near-perfect solution, by simulation.

        The criterion of Madsen & Johansen (2020) carried over: the solution
        whose weights are each off by `epsilon` computes output `k` as
        `op_k(a, b)` with `a = (1 - epsilon) x_i + epsilon * sum_{m != i} x_m`
        (and `b` likewise for `x_j`), here on `samples` test inputs.
        """
        epsilon = float(epsilon)
        rng = np.random.default_rng(seed)
        total, chunk = 0.0, 50_000
        for start in range(0, samples, chunk):
            size = (min(chunk, samples - start), self.input_size)
            x = draw_uniform(rng, self.test_range, size)
            rest = epsilon * x.sum(axis=-1)
            for i, j, op in self.configuration:
                a = (1.0 - 2.0 * epsilon) * x[:, i] + rest
                b = (1.0 - 2.0 * epsilon) * x[:, j] + rest
                exact = OPERATIONS[op](x[:, i], x[:, j])
                total += float(np.sum(np.square(OPERATIONS[op](a, b) - exact)))
        return total / (samples * self.output_size)

    def describe(self):
        """The outputs as formulas, e.g. `["y0 = x12 * x40", ...]`."""
        return [
            f"y{k} = " + SYMBOLS[op].replace("a", f"x{i}").replace("b", f"x{j}")
            for k, (i, j, op) in enumerate(self.configuration)
        ]


def _check_away_from_zero(name, value_range):
    """Refuses a range with 0 inside or at an end (division by ~0)."""
    intervals = [value_range] if np.ndim(value_range) == 1 else value_range
    if any(low <= 0.0 <= high for low, high in intervals):
        raise ValueError(
            f"Received an invalid value for `{name}` with 'div' among the "
            "operations, expected a range that excludes 0 (a quotient of a "
            "denominator near 0 has no finite variance), e.g. ((-10, -1), "
            f"(1, 10)). Received: {name}={value_range!r}"
        )
