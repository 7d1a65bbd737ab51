"""Two inputs, one operation: the task a new user tries first.

`y = a + b`, `a - b`, `a * b`, `a / b` or `a * b` of signed inputs, learned by
one layer from a few thousand examples of small numbers, then tested on
numbers about 100 times larger. It answers "which unit should I use?".

Ranges: `+` and `-` train on U[0, 10], `*` and `/` on U[1, 10] (away from 0,
where a log-space unit's `log |x|` and a quotient blow up), signed `*` on
U[-10, 10]; every operation extrapolates to U[100, 1000], the signed one to
magnitudes in U[100, 1000] with random signs.

The error is relative, `mean |y_hat - y| / mean |y|`: for `a - b`, whose
targets cross 0, a mean of per-example ratios would be dominated by the
examples nearest 0.
"""

import numpy as np

OPERATIONS = {
    "a+b": np.add,
    "a-b": np.subtract,
    "a*b": np.multiply,
    "a/b": np.divide,
    "signed a*b": np.multiply,
}
TRAIN_RANGES = {
    "a+b": (0.0, 10.0),
    "a-b": (0.0, 10.0),
    "a*b": (1.0, 10.0),
    "a/b": (1.0, 10.0),
    "signed a*b": (-10.0, 10.0),
}
EXTRAPOLATION_RANGE = (100.0, 1000.0)


def sample(operation, n, split, seed):
    """`(x, y)`: `n` examples of `operation` (a key of `OPERATIONS`) on the
    `"train"` range (also the interpolation test's) or the
    `"extrapolation"` range, float32, `x` of shape `(n, 2)`, `y` `(n, 1)`."""
    if operation not in OPERATIONS:
        raise ValueError(
            f"Received an invalid value for `operation`, expected one of "
            f"{list(OPERATIONS)}. Received: operation={operation!r}"
        )
    if split not in ("train", "extrapolation"):
        raise ValueError(
            "Received an invalid value for `split`, expected 'train' or "
            f"'extrapolation'. Received: split={split!r}"
        )
    rng = np.random.default_rng(seed)
    if split == "train":
        x = rng.uniform(*TRAIN_RANGES[operation], size=(n, 2))
    else:
        x = rng.uniform(*EXTRAPOLATION_RANGE, size=(n, 2))
        if operation.startswith("signed"):
            x *= rng.choice([-1.0, 1.0], size=(n, 2))
    # The targets of the float32 inputs a model sees, computed in float64.
    x = x.astype("float32").astype("float64")
    y = OPERATIONS[operation](x[:, :1], x[:, 1:])
    return x.astype("float32"), y.astype("float32")


def relative_error(y_hat, y):
    """`mean |y_hat - y| / mean |y|`, in float64; inf for a non-finite
    prediction."""
    y_hat = np.asarray(y_hat, dtype=np.float64).reshape(np.shape(y))
    y = np.asarray(y, dtype=np.float64)
    if not np.all(np.isfinite(y_hat)):
        return float("inf")
    return float(np.mean(np.abs(y_hat - y)) / np.mean(np.abs(y)))
