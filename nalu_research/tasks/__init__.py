"""Data generators and scores for the experiments of Trask et al. (2018).

`nalu_research.seed_batched` (many seeds in one compiled TensorFlow program)
is imported on its own: it needs the TensorFlow backend.
"""

from nalu_research.tasks import identity, mystery, recurrent_arithmetic
from nalu_research.tasks import mnist as mnist  # the image experiments
from nalu_research.tasks import number_words as number_words  # language and code
from nalu_research.tasks import program_evaluation as program_evaluation
from nalu_research.tasks.identity import PAPER_TABLE_5, identity_batches, identity_model
from nalu_research.tasks.metrics import (
    mean_interval,
    mean_squared_error,
    mistry_threshold,
    paper_scale,
    sparsity_error,
    success_threshold,
    wilson_bars,
    wilson_interval,
)
from nalu_research.tasks.static_arithmetic import (
    MADSEN_JOHANSEN_SOLVED_BY,
    OPERATIONS,
    PAPER_TABLE_1,
    SYMBOLS,
    StaticArithmetic,
)

__all__ = [
    "MADSEN_JOHANSEN_SOLVED_BY",
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
    "mean_interval",
    "mean_squared_error",
    "mistry_threshold",
    "paper_scale",
    "sparsity_error",
    "success_threshold",
    "wilson_bars",
    "wilson_interval",
]
