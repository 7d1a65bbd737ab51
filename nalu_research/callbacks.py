"""The experiments' Keras callbacks: metrics evaluated after every epoch
(`Evaluation`) and TensorBoard scalars (`TensorBoardScalars`,
`--tensorboard DIR`).

Apart from `nalu_research.monitoring` because they subclass a Keras class:
this module imports Keras, which a command line imports only after parsing
(`monitoring` names them, and loads this module when first asked).
"""

import math
import numbers
from pathlib import Path

import keras

from keras_nalu.training import moving_averages, training_step


class Evaluation(keras.callbacks.Callback):
    """Adds `evaluate(model)` (a dict of numbers) to the logs of every epoch.

    `keras_nalu.training.fit` keeps what a callback adds to the logs in the
    run's history (a resumed run too), its progress lines print it, and a
    `TensorBoardScalars` after it in the callbacks writes it.

    With `averages=True` (for an optimizer with `use_ema`) the model is
    evaluated with the optimizer's moving averages of its weights, the
    weights the run will end with, and then gets its own weights back;
    `live=True` adds the evaluation of its own (last) weights beside them,
    each name prefixed with `live_`.
    """

    def __init__(self, evaluate, averages=False, live=False):
        super().__init__()
        if live and not averages:
            raise ValueError(
                "Evaluation: live=True evaluates the last weights beside the "
                "moving averages; it needs averages=True"
            )
        self.evaluate = evaluate
        self.averages = averages
        self.live = live

    def on_epoch_end(self, epoch, logs=None):
        if logs is None:
            return
        if self.live:
            logs.update({f"live_{k}": v for k, v in self.evaluate(self.model).items()})
        if not self.averages:
            logs.update(self.evaluate(self.model))
            return
        with moving_averages(self.model):
            logs.update(self.evaluate(self.model))


class TensorBoardScalars(keras.callbacks.Callback):
    """Writes every number of an epoch's logs to TensorBoard, against the
    training step (the optimizer's iterations) at the end of the epoch.

    Keras's own `keras.callbacks.TensorBoard` closes its files at the end of
    every `model.fit` call, and `keras_nalu.training.fit` calls `model.fit`
    once per epoch (to checkpoint between them), so it would leave one events
    file per epoch; this one keeps one file open for the whole run, and is
    the same writer for the loops that are not `model.fit` (`write`).

    Args:
        log_dir: The run's folder (created when missing). A resumed run
            writes a new events file beside the first; TensorBoard reads both.
        prefix: Put before every tag, e.g. `"train/"`.
    """

    def __init__(self, log_dir, prefix=""):
        super().__init__()
        import tensorflow as tf

        self._tf = tf
        self.log_dir = Path(log_dir)
        self.log_dir.mkdir(parents=True, exist_ok=True)
        self.prefix = prefix
        self._writer = tf.summary.create_file_writer(str(self.log_dir))

    def write(self, step, values):
        """Writes the finite numbers of `values` (`{tag: value}`) at `step`."""
        with self._writer.as_default(step=int(step)):
            for tag, value in values.items():
                if isinstance(value, numbers.Real) and math.isfinite(value):
                    self._tf.summary.scalar(self.prefix + tag, float(value))
        self._writer.flush()

    def on_epoch_end(self, epoch, logs=None):
        self.write(training_step(self.model), logs or {})

    def close(self):
        self._writer.close()
