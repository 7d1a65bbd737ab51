"""`model.fit` under `tf.distribute.MirroredStrategy` on 2 logical CPU devices
ends with the weights of a single-device run (same global batch and seed).

Logical devices must be configured before TensorFlow starts, so the check runs
in a fresh process.
"""

import subprocess
import sys
import textwrap

import pytest

SCRIPT = textwrap.dedent(
    """
    import os
    os.environ["TF_CPP_MIN_LOG_LEVEL"] = "2"
    import tensorflow as tf

    cpu = tf.config.list_physical_devices("CPU")[0]
    tf.config.set_logical_device_configuration(
        cpu, [tf.config.LogicalDeviceConfiguration()] * 2
    )
    import keras
    import numpy as np

    from keras_nalu import (
        INALU, NAC, NALU, NAU, NMRU, NMU, ConstrainedDense, NACCell, NALUCell,
        NAUCell, RealNPU,
    )
    from keras_nalu.regularizers import Sparsity

    SCHEDULE = {"regularization_start": 0, "regularization_end": 3}
    LAYERS = {
        "NAC": lambda: [NAC(2), NAC(1)],
        "NALU": lambda: [NALU(2), NALU(1, tied_weights=False)],
        "NAU-NMU": lambda: [NAU(2, **SCHEDULE), NMU(1, **SCHEDULE)],
        "NMRU": lambda: [NAU(2, **SCHEDULE), NMRU(1, **SCHEDULE)],
        "RealNPU": lambda: [NAU(2, **SCHEDULE), RealNPU(1, **SCHEDULE)],
        "INALU": lambda: [INALU(2, **SCHEDULE), INALU(1, **SCHEDULE)],
        "ConstrainedDense": lambda: [ConstrainedDense(1, "nac", use_bias=True)],
        "NACCell": lambda: [keras.layers.RNN(NACCell(2)), NAC(1)],
        "NALUCell": lambda: [keras.layers.RNN(NALUCell(2)), NAC(1)],
        "NAUCell": lambda: [
            keras.layers.RNN(
                NAUCell(2, diagonal_state=True, recurrent_regularizer=Sparsity(1.0))
            ),
            NAU(1),
        ],
    }
    rng = np.random.default_rng(0)
    flat = rng.uniform(1, 2, (64, 4)).astype("float32")
    sequences = rng.uniform(0, 1, (64, 5, 4)).astype("float32")


    def final_weights(name, strategy):
        keras.utils.set_random_seed(0)
        x = sequences if "Cell" in name else flat
        y = x.reshape(64, -1)[:, :1] * x.reshape(64, -1)[:, 1:2]
        with strategy.scope():
            model = keras.Sequential([keras.Input(x.shape[1:]), *LAYERS[name]()])
            model.compile(optimizer=keras.optimizers.Adam(0.01), loss="mse")
        model.fit(x, y, batch_size=16, epochs=2, shuffle=False, verbose=0)
        return [keras.ops.convert_to_numpy(w) for w in model.weights]


    mirrored = tf.distribute.MirroredStrategy(["/cpu:0", "/cpu:1"])
    assert mirrored.num_replicas_in_sync == 2
    for name in LAYERS:
        one = final_weights(name, tf.distribute.get_strategy())
        two = final_weights(name, mirrored)
        assert len(one) == len(two)
        for a, b in zip(one, two):
            np.testing.assert_allclose(a, b, rtol=1e-4, atol=1e-6, err_msg=name)
        print("same weights:", name)
    """
)


@pytest.mark.processes
def test_mirrored_strategy_fit_matches_a_single_device_run():
    result = subprocess.run(
        [sys.executable, "-c", SCRIPT], capture_output=True, text=True, timeout=600
    )
    assert result.returncode == 0, result.stderr[-3000:]
    for name in ("NAC", "NALU", "NAU-NMU", "NMRU", "RealNPU", "INALU",
                 "ConstrainedDense", "NACCell", "NALUCell", "NAUCell"):  # fmt: skip
        assert f"same weights: {name}\n" in result.stdout
