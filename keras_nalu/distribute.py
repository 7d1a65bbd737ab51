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

import json
from collections.abc import Callable, Sequence
from typing import Any

import keras
import numpy as np

from keras_nalu import _loops, validation

tf = validation.tensorflow("keras_nalu.distribute (tf.distribute strategies)")

# The names `make_strategy` takes (those of `keras_nalu.training.fit`).
STRATEGIES = _loops.STRATEGIES


def optimizer_of(model: keras.Model) -> keras.optimizers.Optimizer | None:
    """The optimizer training `model`: `model.optimizer` when Keras compiled
    it (`model.fit`), the `Trainer`'s when a `Trainer` trains it, else `None`.

    A callback reads the training step from it (`optimizer.iterations`)
    under either loop.
    """
    return _loops.optimizer_of(model)


def make_strategy(name: str = "default") -> Any:
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
    validation.one_of("name", name, STRATEGIES)
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


def get_strategy(strategy: Any = None) -> Any:
    """Returns `strategy` as a `tf.distribute.Strategy`.

    Args:
        strategy: A `tf.distribute.Strategy`, one of `"default"`,
            `"mirrored"`, `"multi-worker"` (see `make_strategy`), or `None`
            for the current strategy (the default one outside any scope).
    """
    if strategy is None:
        return tf.distribute.get_strategy()
    if isinstance(strategy, str):
        return make_strategy(validation.one_of("strategy", strategy, STRATEGIES))
    if not isinstance(strategy, tf.distribute.Strategy):
        raise validation.invalid(
            "strategy",
            f"None, a tf.distribute.Strategy or one of {STRATEGIES}",
            strategy,
        )
    return strategy


def is_multi_worker(strategy: Any) -> bool:
    """Whether `strategy` is a `tf.distribute.MultiWorkerMirroredStrategy`."""
    return isinstance(strategy, tf.distribute.MultiWorkerMirroredStrategy)


def is_chief(strategy: Any = None) -> bool:
    """Whether this process should write the run's files (checkpoints,
    results, exported models).

    True except for the non-chief workers of a multi-worker strategy: the
    `chief` task, or worker 0 when the cluster has no chief.

    >>> from keras_nalu.distribute import is_chief
    >>> is_chief()
    True
    """
    resolver = getattr(get_strategy(strategy), "cluster_resolver", None)
    if resolver is None or not resolver.task_type:
        return True
    if resolver.task_type == "chief":
        return True
    has_chief = "chief" in resolver.cluster_spec().as_dict()
    return resolver.task_type == "worker" and resolver.task_id == 0 and not has_chief


def build_in_scope(
    strategy: Any,
    model_fn: Callable[[], keras.Model],
    optimizer_fn: Callable[[], keras.optimizers.Optimizer],
) -> tuple[keras.Model, keras.optimizers.Optimizer]:
    """Calls `model_fn` and `optimizer_fn` inside `strategy.scope()` and
    builds the optimizer for the model; returns `(model, optimizer)`.

    Raises a clear error unless `model_fn` returns a built `keras.Model` and
    `optimizer_fn` a `keras.optimizers.Optimizer`.
    """
    return _loops.build(model_fn, optimizer_fn, strategy.scope())


def worker_index(strategy: Any = None) -> tuple[int, int]:
    """`(index, count)`: this process's place among the workers of `strategy`
    (the chief first), `(0, 1)` outside a multi-worker cluster.

    >>> from keras_nalu.distribute import worker_index
    >>> worker_index()
    (0, 1)
    """
    resolver = getattr(get_strategy(strategy), "cluster_resolver", None)
    if resolver is None or not resolver.task_type:
        return 0, 1
    spec = resolver.cluster_spec().as_dict()
    order = [
        (task, i)
        for task in ("chief", "worker")
        for i in range(len(spec.get(task, [])))
    ]
    return order.index((resolver.task_type, resolver.task_id)), len(order)


def gather_json(value: Any, strategy: Any = None) -> list[Any]:
    """Every worker's `value` (JSON-serializable), as a list in worker order.

    A collective: under a multi-worker strategy every worker must call it, the
    same number of times. Independent runs split over the workers (e.g. the
    seeds of a benchmark) share their results this way, with no shared
    filesystem. Outside a multi-worker cluster it returns `[value]`.
    """
    strategy = get_strategy(strategy)
    if worker_index(strategy)[1] == 1:
        return [json.loads(json.dumps(value))]
    # Collectives gather int32, not bytes: one byte per int32.
    data = np.frombuffer(json.dumps(value).encode(), np.uint8).astype(np.int32)

    def gathered(array):
        local = tf.constant(array)
        values = strategy.experimental_distribute_values_from_function(
            lambda context: local
        )
        return strategy.gather(values, axis=0).numpy()

    # Lengths first (one per replica), then the bytes, padded to the longest.
    replicas = strategy.num_replicas_in_sync
    lengths = gathered(np.array([len(data)], np.int64))
    padded = np.zeros(int(lengths.max()), np.int32)
    padded[: len(data)] = data
    chunks = gathered(padded).reshape(replicas, -1)
    # Every replica of a worker holds that worker's bytes: keep one per worker.
    per_worker = replicas // worker_index(strategy)[1]
    return [
        json.loads(bytes(chunks[i, : lengths[i]].astype(np.uint8)).decode())
        for i in range(0, replicas, per_worker)
    ]


def _per_example_loss_fn(loss):
    """A function `(y_true, y_pred) -> per-example losses` for `loss`, or for
    a list of losses, one per model output (their sum)."""
    if isinstance(loss, (list, tuple)) and loss:
        fns = [_per_example_loss_fn(one) for one in loss]

        def summed(y_true, y_pred):
            if len(fns) == 1 and not isinstance(y_pred, (list, tuple)):
                # One output: Keras accepts a list of one loss for it.
                y_pred = [y_pred]
                y_true = y_true if isinstance(y_true, (list, tuple)) else [y_true]
            if len(y_true) != len(fns) or len(y_pred) != len(fns):
                raise ValueError(
                    f"Received {len(fns)} losses for a model with {len(y_pred)} "
                    f"outputs and {len(y_true)} targets; expected one per output"
                )
            terms = [
                _mean_after_first_axis(fn(t, p))
                for fn, t, p in zip(fns, y_true, y_pred, strict=True)
            ]
            return tf.add_n(terms)

        return summed
    return _one_loss_fn(loss)


def _mean_after_first_axis(per_example):
    per_example = tf.cast(per_example, "float32")
    if per_example.shape.rank is None or per_example.shape.rank > 1:
        per_example = tf.reduce_mean(
            per_example, axis=tf.range(1, tf.rank(per_example))
        )
    return per_example


def _one_loss_fn(loss):
    """A function `(y_true, y_pred) -> per-example losses` for `loss`."""
    if isinstance(loss, keras.losses.Loss):
        # `Loss.call` is the unreduced loss; `Loss.__call__` would reduce it.
        return _per_scalar_output(loss.call)
    if isinstance(loss, str):
        try:
            return _per_scalar_output(keras.losses.get(loss))
        except ValueError:
            pass
    elif callable(loss):
        return loss
    raise validation.invalid(
        "loss",
        "the name of a Keras loss, a `keras.losses.Loss`, a function "
        "`(y_true, y_pred) -> per-example losses`, or a list of these (one per "
        "model output)",
        loss,
    )


def _per_scalar_output(keras_loss):
    """A Keras loss reduces the last axis; for a model with one number per
    example, `(batch,)`, that axis is the batch: give it a trailing axis, as
    `model.fit` gives the same mean."""

    def per_example(y_true, y_pred):
        if y_pred.shape.rank == 1:
            y_true, y_pred = tf.expand_dims(y_true, -1), tf.expand_dims(y_pred, -1)
        return keras_loss(y_true, y_pred)

    return per_example


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
            axes after the first are averaged), or a list of these, one per
            model output (the losses of the outputs are summed).
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
        self,
        model_fn: Callable[[], keras.Model],
        loss: Any,
        optimizer_fn: Callable[[], keras.optimizers.Optimizer],
        strategy: Any = None,
        global_batch_size: int | None = None,
    ) -> None:
        validation.function("model_fn", model_fn, "a function returning a keras.Model")
        validation.function(
            "optimizer_fn", optimizer_fn, "a function returning a keras optimizer"
        )
        self._loss_fn = _per_example_loss_fn(loss)
        if global_batch_size is not None:
            global_batch_size = validation.positive_int(
                "global_batch_size", global_batch_size
            )
        self.global_batch_size = global_batch_size
        self.strategy = strategy = get_strategy(strategy)

        model, optimizer = build_in_scope(strategy, model_fn, optimizer_fn)
        self.model, self.optimizer = model, optimizer
        _loops.register_trainer_optimizer(model, optimizer)
        self._step = None

    def _replica_step(self, x, y):
        model, optimizer = self.model, self.optimizer
        with tf.GradientTape() as tape:
            y_pred = model(x, training=True)
            per_example = _mean_after_first_axis(self._loss_fn(y, y_pred))
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

    def distribute(self, dataset: Any) -> Any:
        """Returns `dataset` distributed over the strategy's replicas.

        Args:
            dataset: A `tf.data.Dataset` or a `keras.utils.PyDataset` of
                `(x, y)` batched with the global batch size (split among the
                replicas and, under a multi-worker strategy, sharded among the
                workers), or a function
                `dataset_fn(input_context)` returning each worker's dataset,
                batched with `input_context.get_per_replica_batch_size(...)`.
        """
        if isinstance(dataset, keras.utils.PyDataset):
            dataset = _as_tf_dataset(dataset)
        if isinstance(dataset, tf.data.Dataset):
            return self.strategy.experimental_distribute_dataset(dataset)
        if callable(dataset):
            return self.strategy.distribute_datasets_from_function(dataset)
        raise validation.invalid(
            "dataset",
            "a tf.data.Dataset or keras.utils.PyDataset of (x, y), or a function "
            "dataset_fn(input_context)",
            dataset,
        )

    def train(self, dataset: Any, steps: int) -> list[float]:
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
        steps = validation.positive_int("steps", steps)
        iterator = self._iterate(dataset)
        return [self._take_step(iterator, steps, done) for done in range(steps)]

    def _iterate(self, dataset):
        """An iterator over `dataset` distributed, the step compiled once."""
        if self._step is None:
            self._step = tf.function(self._distributed_step)
        return iter(self.distribute(dataset))

    def _take_step(self, iterator, needed, done):
        """One step's loss; a clear error when the dataset ran out after
        `done` of the `needed` batches."""
        try:
            return float(self._step(iterator))
        except (tf.errors.OutOfRangeError, StopIteration):
            raise _ran_out(needed, done) from None

    def fit(
        self,
        dataset: Any,
        epochs: int = 1,
        initial_epoch: int = 0,
        steps_per_epoch: int | None = None,
        callbacks: Sequence[keras.callbacks.Callback] | None = None,
        verbose: int = 0,
    ) -> keras.callbacks.History:
        """Trains like `model.fit`: epochs of steps, with Keras callbacks.

        The callbacks get the calls `model.fit` makes (`on_train_begin`,
        `on_epoch_begin`, `on_train_batch_end` with `logs["loss"]`, the mean
        loss of the epoch so far, `on_epoch_end`, `on_train_end`), with
        `callback.model` the trainer's model, and training stops at the end of
        a step in which a callback sets `model.stop_training = True` (as
        `keras.callbacks.TerminateOnNaN` does). As `model.fit`, it ends by
        writing an optimizer's moving averages (`use_ema`) into the model,
        before `on_train_end`.

        Args:
            dataset: See `distribute`. One iterator runs through all the
                epochs, so a dataset of `steps_per_epoch * epochs` batches (or a
                repeated one) gives every step fresh batches.
            epochs: Positive integer, the index of the last epoch plus one.
            initial_epoch: Non-negative integer, the epoch to start at.
            steps_per_epoch: Positive integer, or `None` for the number of
                batches of `dataset` (which must then be finite).
            callbacks: A list of `keras.callbacks.Callback`.
            verbose: 0 (silent) or 1 (a progress bar).

        Returns:
            A `keras.callbacks.History` (also `model.history`).
        """
        epochs = validation.positive_int("epochs", epochs)
        initial_epoch = validation.non_negative_int("initial_epoch", initial_epoch)
        if steps_per_epoch is None:
            steps_per_epoch = _number_of_batches(dataset)
        steps_per_epoch = validation.positive_int("steps_per_epoch", steps_per_epoch)
        calls = keras.callbacks.CallbackList(
            list(callbacks or []),
            add_history=True,
            add_progbar=bool(verbose),
            model=self.model,
            verbose=verbose,
            epochs=epochs,
            steps=steps_per_epoch,
        )
        iterator = self._iterate(dataset)
        self.model.stop_training = False
        logs = {}
        calls.on_train_begin()
        for epoch in range(initial_epoch, epochs):
            calls.on_epoch_begin(epoch)
            total = 0.0
            for step in range(steps_per_epoch):
                calls.on_train_batch_begin(step)
                total += self._take_step(
                    iterator,
                    steps_per_epoch * (epochs - initial_epoch),
                    (epoch - initial_epoch) * steps_per_epoch + step,
                )
                logs = {"loss": total / (step + 1)}
                calls.on_train_batch_end(step, logs)
                if self.model.stop_training:
                    break
            calls.on_epoch_end(epoch, logs)
            if self.model.stop_training:
                break
        # As `model.fit`: an optimizer's moving averages (`use_ema`) go into
        # the model before `on_train_end`.
        self.optimizer.finalize_variable_values(self.model.trainable_variables)
        calls.on_train_end(logs)
        return self.model.history


def _ran_out(steps, step):
    return ValueError(
        "Received an invalid value for `dataset`, expected at least "
        f"{steps} batches (use dataset.repeat()). Received: a dataset that "
        f"ran out after {step} batches"
    )


def _number_of_batches(dataset):
    if isinstance(dataset, keras.utils.PyDataset):
        return len(dataset)
    if isinstance(dataset, tf.data.Dataset):
        cardinality = int(dataset.cardinality())
        if cardinality > 0:
            return cardinality
    raise ValueError(
        "Received steps_per_epoch=None for a dataset of unknown or infinite "
        "length; expected steps_per_epoch, a positive integer"
    )


def _as_tf_dataset(dataset):
    """A `keras.utils.PyDataset` of `(x, y)` as a `tf.data.Dataset`, in order."""
    first = dataset[0]
    if not (isinstance(first, tuple) and len(first) == 2):
        raise validation.invalid(
            "dataset", "a keras.utils.PyDataset of (x, y) batches", dataset
        )

    def spec(value):
        value = tf.convert_to_tensor(value)
        return tf.TensorSpec([None, *value.shape[1:]], value.dtype)

    signature = tf.nest.map_structure(spec, first)

    def batches():
        for index in range(len(dataset)):
            yield dataset[index]

    result = tf.data.Dataset.from_generator(batches, output_signature=signature)
    # Every worker reads the whole stream and keeps its share of each batch.
    options = tf.data.Options()
    options.experimental_distribute.auto_shard_policy = (
        tf.data.experimental.AutoShardPolicy.DATA
    )
    return result.with_options(options)
