"""Data generators and scores for the experiments of Trask et al. (2018)."""

from keras_nalu.tasks.metrics import mean_squared_error, paper_scale
from keras_nalu.tasks.static_arithmetic import OPERATIONS, StaticArithmetic

__all__ = ["OPERATIONS", "StaticArithmetic", "mean_squared_error", "paper_scale"]
