"""Neural arithmetic units (Trask et al., 2018) as Keras 3 layers.

`NAC` and `NALU` are layers, `NACCell` and `NALUCell` their recurrent cells
for `keras.layers.RNN` (`NAUCell` the NAU's, whose state weight reaches 1
exactly); `NAU`, `NMU`, `INALU`, `NMRU`, `RealNPU` and `NPU` are the
stabler, sign-aware and dividing units published since; `keras_nalu.ops` holds the
math they share; `snap_weights` rounds a trained model's arithmetic weights to
exact values and verifies the result; `formulas` writes what a model computes
as algebra; `export_saved_model` writes a verified
TensorFlow SavedModel;
`keras_nalu.training.fit` trains resumably on any `tf.distribute` strategy;
`keras_nalu.losses.NormalizedMeanSquaredError` weighs outputs of different
scales alike.

The experiments of the paper live in a separate package, `nalu_research`,
which this library never imports.
"""

import importlib.metadata as _metadata


def _refuse_the_namesake():
    """Raises an `ImportError` when `keras-nalu` (a 2019 Keras 2 package on
    PyPI that ships the same import package, `keras_nalu`) is installed: its
    files replace or delete this package's, so nothing imports reliably."""
    try:
        other = _metadata.distribution("keras-nalu")
    except _metadata.PackageNotFoundError:
        return
    raise ImportError(
        f"Another distribution, keras-nalu {other.version} (a 2019 Keras 2 "
        "package), is installed in this environment and ships the same import "
        "package, keras_nalu: installing or removing it overwrites or deletes "
        "this package's files. Remove both, then install this one again: "
        "pip uninstall -y keras-nalu keras-neural-arithmetic, then "
        "pip install . in a checkout of keras-neural-arithmetic (or its wheel)"
    )


_refuse_the_namesake()

from keras_nalu import initializers, layers, losses, ops, regularizers  # noqa: E402
from keras_nalu.export import export_saved_model  # noqa: E402
from keras_nalu.formulas import expressions, formulas  # noqa: E402
from keras_nalu.layers import *  # noqa: E402, F403  (every layer, by its one list)
from keras_nalu.snapping import snap_weights  # noqa: E402

__version__ = "0.2.0"

__all__ = [
    "export_saved_model",
    "expressions",
    "formulas",
    "initializers",
    "losses",
    "ops",
    "regularizers",
    "snap_weights",
]
__all__ += layers.__all__
