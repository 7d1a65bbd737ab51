"""The research harness of keras_nalu: the experiments of Trask et al. (2018).

`nalu_research.tasks` generates each experiment's data and scores it;
`nalu_research.layers` holds the experiment-only layers and cells, registered
under the package name `nalu_research` so that every saved experiment model
reloads once `nalu_research.layers` is imported; `nalu_research.seed_batched`
trains many seeds in one compiled program; `nalu_research.experiments` holds
the command lines that `examples/` runs, and `nalu_research.backends` picks
their Keras backend. The library, `keras_nalu`, never imports this package.

Importing this package imports no Keras (`nalu_research.layers` loads on first
use), so that `nalu_research.backends` can choose the backend first.
"""

import importlib
import os

# TensorFlow's C++ logs: warnings and errors only, set once for every command
# of the harness (before any experiment imports Keras or TensorFlow).
os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "2")

__all__ = ["layers"]


def __getattr__(name):
    if name == "layers":
        return importlib.import_module("nalu_research.layers")
    raise AttributeError(f"module 'nalu_research' has no attribute {name!r}")
