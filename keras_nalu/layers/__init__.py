from keras_nalu.layers.nac import NAC
from keras_nalu.layers.nac_cell import NACCell
from keras_nalu.layers.nalu import NALU
from keras_nalu.layers.nalu_cell import NALUCell

__all__ = ["NAC", "NACCell", "NALU", "NALUCell"]
