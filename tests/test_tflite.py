"""Exported models convert to TensorFlow Lite and the interpreter reproduces them.

A recurrent cell converts when its `keras.layers.RNN` is unrolled to a fixed
length; the dynamic-length loop uses TensorList ops that the builtin TFLite op
set lacks (they need the Flex delegate, which the pip interpreter does not
include).
"""

import keras
import numpy as np
import pytest
import tensorflow as tf

from keras_nalu import (
    INALU,
    NALU,
    NAU,
    NMRU,
    NMU,
    NALUCell,
    RealNPU,
    export_saved_model,
)

pytestmark = pytest.mark.filterwarnings(
    "ignore:.*tf.lite.Interpreter is deprecated:UserWarning"
)


def tflite_outputs(model, x, tmp_path):
    path = export_saved_model(model, tmp_path / "model", sample_input=x)
    flatbuffer = tf.lite.TFLiteConverter.from_saved_model(str(path)).convert()
    interpreter = tf.lite.Interpreter(model_content=flatbuffer)
    (given,), (output,) = (
        interpreter.get_input_details(),
        interpreter.get_output_details(),
    )
    interpreter.resize_tensor_input(given["index"], x.shape)
    interpreter.allocate_tensors()
    interpreter.set_tensor(given["index"], x)
    interpreter.invoke()
    return interpreter.get_tensor(output["index"])


RNG = np.random.default_rng(0)


@pytest.mark.parametrize(
    "layers",
    [
        lambda: [NALU(3), NALU(2, tied_weights=False), NALU(1)],
        lambda: [NAU(3), NMU(2), NMRU(2), RealNPU(2), INALU(1)],
    ],
    ids=["nalu", "stable-units"],
)
def test_static_models_convert_and_reproduce_keras(layers, tmp_path):
    keras.utils.set_random_seed(0)
    model = keras.Sequential([keras.Input((6,)), *layers()])
    x = RNG.uniform(-2, 2, (9, 6)).astype("float32")
    # TFLite's kernels round exp and log otherwise: outputs of order 1 agree
    # to float32 rounding of the terms they are a difference of (measured
    # 1.9e-6 at -0.0227 on one unseeded draw).
    np.testing.assert_allclose(
        tflite_outputs(model, x, tmp_path),
        keras.ops.convert_to_numpy(model(x)),
        rtol=1e-5,
        atol=1e-5,
    )


def test_unrolled_nalu_cell_converts_and_reproduces_keras(tmp_path):
    model = keras.Sequential(
        [
            keras.Input((12, 3)),
            keras.layers.RNN(NALUCell(2), unroll=True),
            NAU(1),
        ]
    )
    x = RNG.uniform(0.5, 1.5, (4, 12, 3)).astype("float32")
    np.testing.assert_allclose(
        tflite_outputs(model, x, tmp_path),
        keras.ops.convert_to_numpy(model(x)),
        rtol=1e-5,
        atol=1e-6,
    )
