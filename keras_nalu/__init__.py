"""Neural arithmetic units (Trask et al., 2018) as Keras 3 layers.

`NAC` and `NALU` are layers, `NACCell` and `NALUCell` their recurrent cells
for `keras.layers.RNN` (`NAUCell` the NAU's, whose state weight reaches 1
exactly); `NAU`, `NMU`, `INALU`, `NMRU` and `RealNPU` are the
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

from keras_nalu import initializers, losses, ops, regularizers
from keras_nalu.export import export_saved_model
from keras_nalu.formulas import expressions, formulas
from keras_nalu.layers import (
    INALU,
    NAC,
    NALU,
    NAU,
    NMRU,
    NMU,
    ConfiguredNALU,
    ConstrainedDense,
    NACCell,
    NALUCell,
    NAUCell,
    RealNPU,
)
from keras_nalu.snapping import snap_weights

__version__ = "0.2.0"

__all__ = [
    "ConfiguredNALU",
    "ConstrainedDense",
    "INALU",
    "NAC",
    "NALU",
    "NACCell",
    "NALUCell",
    "NAU",
    "NAUCell",
    "NMRU",
    "NMU",
    "RealNPU",
    "export_saved_model",
    "expressions",
    "formulas",
    "initializers",
    "losses",
    "ops",
    "regularizers",
    "snap_weights",
]
