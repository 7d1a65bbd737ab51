"""Data generators and scores for the experiments of Trask et al. (2018)."""

from keras_nalu.tasks.metrics import (
    mean_squared_error,
    paper_scale,
    sparsity_error,
    success_threshold,
    wilson_interval,
)
from keras_nalu.tasks.static_arithmetic import (
    OPERATIONS,
    PAPER_TABLE_1,
    SYMBOLS,
    StaticArithmetic,
)

__all__ = [
    "OPERATIONS",
    "PAPER_TABLE_1",
    "SYMBOLS",
    "StaticArithmetic",
    "mean_squared_error",
    "paper_scale",
    "sparsity_error",
    "success_threshold",
    "wilson_interval",
]
