"""Data generators and scores for the experiments of Trask et al. (2018).

`keras_nalu.tasks.seed_batched` (many seeds in one compiled TensorFlow program)
is imported on its own: it needs the TensorFlow backend.
"""

from keras_nalu.tasks import identity, mystery, recurrent_arithmetic
from keras_nalu.tasks import mnist as mnist  # the image experiments
from keras_nalu.tasks import number_words as number_words  # language and code
from keras_nalu.tasks import program_evaluation as program_evaluation
from keras_nalu.tasks.identity import PAPER_TABLE_5, identity_batches, identity_model
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
    "PAPER_TABLE_5",
    "identity",
    "identity_batches",
    "identity_model",
    "mystery",
    "recurrent_arithmetic",
    "PAPER_TABLE_1",
    "SYMBOLS",
    "StaticArithmetic",
    "mean_squared_error",
    "paper_scale",
    "sparsity_error",
    "success_threshold",
    "wilson_interval",
]
