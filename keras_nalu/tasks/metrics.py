"""Scores the paper reports."""

import numpy as np


def mean_squared_error(y_true, y_pred):
    """Mean squared error over all elements, computed in float64."""
    y_true = np.asarray(y_true, dtype=np.float64)
    y_pred = np.asarray(y_pred, dtype=np.float64)
    if y_true.shape != y_pred.shape:
        raise ValueError(
            "Received y_true and y_pred of different shapes, expected equal "
            f"shapes. Received: y_true.shape={y_true.shape}, "
            f"y_pred.shape={y_pred.shape}"
        )
    return float(np.mean(np.square(y_pred - y_true)))


def paper_scale(error, random_error):
    """`100 * error / random_error`, the scale of the paper's Table 1.

    `random_error` is the error of a randomly initialized model of the same
    architecture on the same data: 100 means no better than it, 0 is exact,
    and above 100 is worse than random.
    """
    if not random_error > 0:
        raise ValueError(
            "Received an invalid value for `random_error`, expected a number "
            f"greater than 0. Received: random_error={random_error!r}"
        )
    return 100.0 * error / random_error
