"""The recurrent arithmetic task of Trask et al. (2018), Section 4.1, Appendix B."""

import numpy as np

from nalu_research import paper
from nalu_research.tasks.static_arithmetic import SPLITS, StaticArithmetic

# Table 1 of the paper (recurrent task), on its scale: (interpolation,
# extrapolation); `inf` stands for the paper's ">999".
PAPER_TABLE_1_RECURRENT = paper.table("table_1_recurrent")


class RecurrentArithmetic:
    """Learn `op(a, b)` where `a`, `b` are sums over slices and over time.

    Each step `x_t` has `input_size` elements from `value_range`;
    `a = sum_t sum(x_t[a_slice])`, `b = sum_t sum(x_t[b_slice])`, with the
    slices of `StaticArithmetic` (drawn once from `seed`). Training and
    interpolation use sequences of `train_length` steps, extrapolation
    sequences of `extrapolation_length` steps over the same values, so `a` and
    `b` grow by the ratio of the lengths (100x by default), as in the paper.
    The paper leaves the value range open; U[1, 2] keeps every `b` positive
    (division) and every `a` positive (square root), as in the static task.

    Example:

    >>> from nalu_research.tasks.recurrent_arithmetic import RecurrentArithmetic
    >>> task = RecurrentArithmetic("add", seed=0)
    >>> x, y = task.sample(3, "extrapolation", seed=1)
    >>> x.shape, y.shape
    ((3, 1000, 10), (3, 1))
    """

    def __init__(
        self,
        operation="add",
        input_size=10,
        subset_ratio=0.25,
        overlap_ratio=0.5,
        value_range=(1.0, 2.0),
        train_length=10,
        extrapolation_length=1000,
        seed=0,
    ):
        from keras_nalu import validation

        self.static = StaticArithmetic(
            operation,
            input_size=input_size,
            subset_ratio=subset_ratio,
            overlap_ratio=overlap_ratio,
            interpolation_range=value_range,
            extrapolation_range=value_range,
            seed=seed,
        )
        self.operation, self.input_size = operation, self.static.input_size
        self.a_slice, self.b_slice = self.static.a_slice, self.static.b_slice
        self.value_range = self.static.interpolation_range
        self.train_length = validation.positive_int("train_length", train_length)
        self.extrapolation_length = validation.positive_int(
            "extrapolation_length", extrapolation_length
        )
        self.seed = seed

    def targets(self, x):
        """`op(a, b)` for sequences `x` of shape `(..., steps, input_size)`."""
        return self.static.targets(np.asarray(x, dtype=np.float64).sum(axis=-2))

    def sample(self, n, split="train", seed=None):
        """`n` sequences `(x, y)` of a split, float32, reproducible by `seed`."""
        from keras_nalu import validation

        validation.one_of("split", split, SPLITS)
        n = validation.positive_int("n", n)
        steps = (
            self.extrapolation_length
            if split == "extrapolation"
            else (self.train_length)
        )
        x = np.random.default_rng(seed).uniform(
            *self.value_range, size=(n, steps, self.input_size)
        )
        return x.astype(np.float32), self.targets(x).astype(np.float32)

    def training_batches(self, batch_size=128, steps=1000, seed=0, start=0):
        """A `keras.utils.PyDataset` of `steps` fresh training batches.

        Batch `i` is drawn from the seed `(seed, start + i)`, so training in
        chunks (`start=0`, then `start=steps`, ...) sees the batches of one
        long run. Pass it to `model.fit(..., shuffle=False)`.
        """
        from nalu_research.tasks.batches import FreshBatches

        return FreshBatches(self, batch_size, steps, seed, start)
