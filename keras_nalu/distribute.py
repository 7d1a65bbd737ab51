"""A custom training loop on TensorFlow's distribution engine.

Keras 3's `model.fit` does not run under
`tf.distribute.MultiWorkerMirroredStrategy` (keras-team/keras#20585: it fails
at the first step), but a custom loop under that strategy does. `Trainer` is
that loop, written once: it builds the model and its optimizer inside
`strategy.scope()`, distributes the dataset, and runs one compiled step per
batch in which every replica computes its share of the global loss, the
optimizer sums the gradients over all replicas of all workers, and every
replica applies the same update. It works as well with the default strategy
(one device) and with `tf.distribute.MirroredStrategy` (several devices of one
host), so a script written for it runs unchanged on one CPU or on many hosts.

The loss of a step is the mean of the per-example loss over the global batch
plus the model's own losses (`model.losses`: the scheduled penalties that
`NAU`, `NMU`, `NMRU` and `INALU` add when called with `training=True`, and any
weight regularizers), scaled as TensorFlow's custom-loop guide does
(`tf.nn.compute_average_loss`, `tf.nn.scale_regularization_loss`), so that
the sum over replicas is the loss of a single-device run with the same global
batch.

This module uses TensorFlow directly: it is the TensorFlow distribution
engine's loop. The layers themselves stay backend-agnostic (`keras.ops`).
"""

import keras
import tensorflow as tf

from keras_nalu.layers import _validation

STRATEGIES = ("default", "mirrored", "multi-worker")


def make_strategy(name="default"):
    """Returns a `tf.distribute.Strategy` by name.

    `"default"` is the default strategy (no distribution), `"mirrored"` a
    `tf.distribute.MirroredStrategy` over the local devices, `"multi-worker"`
    a `tf.distribute.MultiWorkerMirroredStrategy` configured by the
    `TF_CONFIG` environment variable (one worker when it is unset).

    A multi-worker strategy must be created at the start of the program,
    before TensorFlow runs any operation.

    Args:
        name: One of `"default"`, `"mirrored"`, `"multi-worker"`.

    Example:

    >>> from keras_nalu.distribute import make_strategy
    >>> make_strategy("default").num_replicas_in_sync
    1
    """
    _validation.one_of("name", name, STRATEGIES)
    if name == "mirrored":
        return tf.distribute.MirroredStrategy()
    if name == "multi-worker":
        try:
            return tf.distribute.MultiWorkerMirroredStrategy()
        except RuntimeError as error:
            raise RuntimeError(
                "A multi-worker strategy must be created before TensorFlow runs "
                "any operation (even keras.utils.set_random_seed or "
                "tf.data): call make_strategy('multi-worker') first in the "
                f"program. TensorFlow said: {error}"
            ) from error
    return tf.distribute.get_strategy()


def _per_example_loss_fn(loss):
    """A function `(y_true, y_pred) -> per-example losses` for `loss`."""
    if isinstance(loss, keras.losses.Loss):
        # `Loss.call` is the unreduced loss; `Loss.__call__` would reduce it.
        return loss.call
    if isinstance(loss, str):
        try:
            return keras.losses.get(loss)
        except ValueError:
            pass
    elif callable(loss):
        return loss
    raise _validation._invalid(
        "loss",
        "the name of a Keras loss, a `keras.losses.Loss` or a function "
        "`(y_true, y_pred) -> per-example losses`",
        loss,
    )


def _callable(name, value, expected):
    if not callable(value):
        raise _validation._invalid(name, expected, value)
    return value


class Trainer:
    """A custom training loop for one model under any `tf.distribute` strategy.

    Each step runs `model(x, training=True)` on every replica, computes
    `compute_average_loss(loss(y, y_pred)) +
    scale_regularization_loss(sum(model.losses))`, and lets the optimizer sum
    the gradients over the replicas (of all workers) and apply them. The
    returned loss of a step is the sum over replicas: the mean loss over the
    global batch plus the model's losses, the loss of a single-device run with
    the same global batch.

    Under `tf.distribute.MultiWorkerMirroredStrategy`, every worker runs the
    same script with its own `TF_CONFIG`, builds the same model, reads the same
    dataset (sharded automatically) and ends with the same weights.

    Args:
        model_fn: A function of no arguments returning a built `keras.Model`
            (give it a `keras.Input`). It is called inside `strategy.scope()`.
        loss: The name of a Keras loss (`"mse"`), a `keras.losses.Loss`, or a
            function `(y_true, y_pred)` returning one loss per example (any
            axes after the first are averaged).
        optimizer_fn: A function of no arguments returning a
            `keras.optimizers.Optimizer`, called inside `strategy.scope()`.
        strategy: A `tf.distribute.Strategy`, or one of `"default"`,
            `"mirrored"`, `"multi-worker"` (see `make_strategy`; a
            multi-worker strategy must be created before TensorFlow runs
            anything, so create it first with `make_strategy` and pass it
            here). `None` is the current strategy (the default one outside
            any scope).
        global_batch_size: The number of examples of a global batch, used to
            average the loss (`None`: the per-replica batch size times the
            number of replicas, exact when every batch is full).

    Attributes:
        model: The model, its variables mirrored over the strategy's replicas.
        optimizer: The optimizer, built for the model's trainable variables.
        strategy: The strategy.

    Example:

    >>> import numpy as np
    >>> import keras
    >>> import tensorflow as tf
    >>> from keras_nalu import NAU, NMU
    >>> from keras_nalu.distribute import Trainer
    >>> x = np.random.default_rng(0).uniform(1, 2, (64, 2)).astype("float32")
    >>> dataset = tf.data.Dataset.from_tensor_slices((x, x[:, :1] * x[:, 1:]))
    >>> trainer = Trainer(
    ...     lambda: keras.Sequential([keras.Input((2,)), NAU(2), NMU(1)]),
    ...     loss="mse",
    ...     optimizer_fn=lambda: keras.optimizers.Adam(0.01),
    ... )
    >>> losses = trainer.train(dataset.batch(16).repeat(), steps=4)
    >>> len(losses)
    4

    On several hosts, every host runs the same script with its own
    `TF_CONFIG`, and the script creates the strategy before anything else:
    `strategy = make_strategy("multi-worker")` first, then
    `Trainer(..., strategy=strategy)`.
    """

    def __init__(
        self, model_fn, loss, optimizer_fn, strategy=None, global_batch_size=None
    ):
        _callable("model_fn", model_fn, "a function returning a keras.Model")
        _callable(
            "optimizer_fn", optimizer_fn, "a function returning a keras optimizer"
        )
        self._loss_fn = _per_example_loss_fn(loss)
        if global_batch_size is not None:
            global_batch_size = _validation.positive_int(
                "global_batch_size", global_batch_size
            )
        self.global_batch_size = global_batch_size
        if strategy is None:
            strategy = tf.distribute.get_strategy()
        elif isinstance(strategy, str):
            strategy = make_strategy(
                _validation.one_of("strategy", strategy, STRATEGIES)
            )
        elif not isinstance(strategy, tf.distribute.Strategy):
            raise _validation._invalid(
                "strategy",
                f"None, a tf.distribute.Strategy or one of {STRATEGIES}",
                strategy,
            )
        self.strategy = strategy

        with strategy.scope():
            model = model_fn()
            if not isinstance(model, keras.Model):
                raise _validation._invalid(
                    "model_fn", "a function returning a keras.Model", model
                )
            if not model.built:
                raise ValueError(
                    "Received an invalid value for `model_fn`, expected a "
                    "function returning a built keras.Model (start it with "
                    f"keras.Input). Received: a model that is not built, {model!r}"
                )
            optimizer = optimizer_fn()
            if not isinstance(optimizer, keras.optimizers.Optimizer):
                raise _validation._invalid(
                    "optimizer_fn",
                    "a function returning a keras.optimizers.Optimizer",
                    optimizer,
                )
            # Slot variables must exist before the first (compiled) step.
            optimizer.build(model.trainable_variables)
        self.model, self.optimizer = model, optimizer
        self._step = None

    def _replica_step(self, x, y):
        model, optimizer = self.model, self.optimizer
        with tf.GradientTape() as tape:
            y_pred = model(x, training=True)
            per_example = tf.cast(self._loss_fn(y, y_pred), "float32")
            if per_example.shape.rank is None or per_example.shape.rank > 1:
                axes = tf.range(1, tf.rank(per_example))
                per_example = tf.reduce_mean(per_example, axis=axes)
            loss = tf.nn.compute_average_loss(
                per_example, global_batch_size=self.global_batch_size
            )
            if model.losses:
                penalties = [tf.cast(v, "float32") for v in model.losses]
                loss += tf.nn.scale_regularization_loss(tf.add_n(penalties))
            scaled = optimizer.scale_loss(loss)
        variables = model.trainable_variables
        grads = tape.gradient(scaled, variables)
        optimizer.apply_gradients(zip(grads, variables, strict=True))
        return loss

    def _distributed_step(self, iterator):
        x, y = next(iterator)
        per_replica = self.strategy.run(self._replica_step, args=(x, y))
        return self.strategy.reduce(tf.distribute.ReduceOp.SUM, per_replica, axis=None)

    def distribute(self, dataset):
        """Returns `dataset` distributed over the strategy's replicas.

        Args:
            dataset: A `tf.data.Dataset` of `(x, y)` batched with the global
                batch size (split among the replicas and, under a multi-worker
                strategy, sharded among the workers), or a function
                `dataset_fn(input_context)` returning each worker's dataset,
                batched with `input_context.get_per_replica_batch_size(...)`.
        """
        if isinstance(dataset, tf.data.Dataset):
            return self.strategy.experimental_distribute_dataset(dataset)
        if callable(dataset):
            return self.strategy.distribute_datasets_from_function(dataset)
        raise _validation._invalid(
            "dataset",
            "a tf.data.Dataset of (x, y) or a function dataset_fn(input_context)",
            dataset,
        )

    def train(self, dataset, steps):
        """Trains for `steps` batches of `dataset`; returns each step's loss.

        Args:
            dataset: See `distribute`. It must hold at least `steps` batches
                (use `.repeat()`); under a multi-worker strategy every worker
                must reach the same number of steps.
            steps: Positive integer, the number of training steps.

        Returns:
            A list of `steps` floats, the loss of each step over the global
            batch (the same on every worker).
        """
        steps = _validation.positive_int("steps", steps)
        iterator = iter(self.distribute(dataset))
        if self._step is None:
            self._step = tf.function(self._distributed_step)
        losses = []
        for step in range(steps):
            try:
                loss = self._step(iterator)
            except (tf.errors.OutOfRangeError, StopIteration):
                raise ValueError(
                    "Received an invalid value for `dataset`, expected at least "
                    f"steps={steps} batches (use dataset.repeat()). Received: a "
                    f"dataset that ran out after {step} batches"
                ) from None
            losses.append(float(loss))
        return losses
