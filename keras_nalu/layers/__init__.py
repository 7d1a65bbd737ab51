"""The layers and cells. `__all__` below is the package's one list of them:
`keras_nalu` re-exports what it names, and the tests (of the API pages too)
and the seed-batched engine find every layer through it or through its
registration with Keras. A new layer is its module, its import and name
here, and its page `docs/api/layers/NAME.md`."""

from keras_nalu.layers.arithmetic_unit import ArithmeticUnit
from keras_nalu.layers.configured_nalu import ConfiguredNALU
from keras_nalu.layers.constrained_dense import ConstrainedDense
from keras_nalu.layers.inalu import INALU
from keras_nalu.layers.nac import NAC
from keras_nalu.layers.nac_cell import NACCell
from keras_nalu.layers.nalu import NALU
from keras_nalu.layers.nalu_cell import NALUCell
from keras_nalu.layers.nau import NAU
from keras_nalu.layers.nau_cell import NAUCell
from keras_nalu.layers.nmru import NMRU
from keras_nalu.layers.nmu import NMU
from keras_nalu.layers.npu import NPU
from keras_nalu.layers.real_npu import RealNPU

__all__ = [
    "ArithmeticUnit",
    "ConfiguredNALU",
    "ConstrainedDense",
    "INALU",
    "NAC",
    "NACCell",
    "NALU",
    "NALUCell",
    "NAU",
    "NAUCell",
    "NMRU",
    "NMU",
    "NPU",
    "RealNPU",
]
