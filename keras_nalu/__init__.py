"""Neural arithmetic units (Trask et al., 2018) as Keras 3 layers.

`NAC` and `NALU` are layers, `NACCell` and `NALUCell` their recurrent cells
for `keras.layers.RNN`; `NAU`, `NMU`, `INALU` and `NMRU` are the stabler,
sign-aware and dividing units published since; `keras_nalu.ops` holds the
math they share; `export_saved_model` writes a verified TensorFlow SavedModel;
`keras_nalu.tasks` generates the paper's experiments.
"""

from keras_nalu import initializers, ops, tasks
from keras_nalu.export import export_saved_model
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
)

__version__ = "0.1.0"

__all__ = [
    "ConfiguredNALU",
    "ConstrainedDense",
    "INALU",
    "NAC",
    "NALU",
    "NACCell",
    "NALUCell",
    "NAU",
    "NMRU",
    "NMU",
    "export_saved_model",
    "initializers",
    "ops",
    "tasks",
]
