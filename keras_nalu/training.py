"""Training that survives interruption and says when it diverges, on any
`tf.distribute` strategy: the loop every example runs.

`fit` trains one model epoch by epoch, on every Keras backend: on jax and
torch with the default strategy and `model.fit` (tf.distribute and the custom
loop need the tensorflow backend). With the default strategy or
`tf.distribute.MirroredStrategy` each epoch is a `model.fit` call; under
`tf.distribute.MultiWorkerMirroredStrategy`, which Keras 3's `model.fit` does
not support, it is `keras_nalu.distribute.Trainer.fit`, the same loop written
out. The callbacks see the same calls either way.

After every epoch, `fit` saves the run's `keras_nalu.checkpoints.Checkpoint`:
the model's variables (its weights and the states of its random generators,
e.g. dropout's), the optimizer's variables (step, learning rate, moments), the
epoch, the history, the divergence, the run's `config` and the callbacks'
states, in one file written under a temporary name and renamed over the
previous one, so a kill at any instant leaves a whole checkpoint, everything
in it from one epoch. The folder is checked writable before the first epoch.
Run again with the same `checkpoint_dir` and `config`, `fit` resumes at the
epoch after the last checkpoint, also to train on: given more `epochs` than
the checkpoint's run, it continues that run. Each epoch's batches come from
`data_fn(epoch)`, so when they depend only on the epoch (fresh batches drawn
from a seed and the epoch, or a fixed dataset in a fixed order) the resumed
run ends with the same weights as an uninterrupted one.

On jax and torch `fit` needs no TensorFlow (it is imported only for a
`tf.distribute` strategy or the custom loop, which need the tensorflow
backend).

`keras.callbacks.BackupAndRestore` is not used: it runs only inside
`model.fit`, not in the custom multi-worker loop; it overwrites its weights
file and then a separate metadata file, so a kill between the two leaves them
from different epochs; and it keeps neither the history, the divergence, the
callbacks' states nor the `config` to check a resume against.

A non-finite loss stops the run at once (as `keras.callbacks.TerminateOnNaN`
does) and `FitResult.divergence` says at which epoch and step.

An optimizer with `use_ema=True` works as in one `model.fit` call of all the
epochs: the model trains on its own weights throughout (the callbacks'
`on_epoch_end` and the checkpoints see those, and the moving averages are
among the optimizer's variables in the checkpoint), and the model `fit`
returns holds the averages.
"""

import contextlib
import dataclasses
import functools
import json
import math
import numbers
import os
import sys
import time
import warnings
from collections.abc import Callable, Iterator, Sequence
from typing import Any

import keras
import numpy as np

from keras_nalu import _loops, validation
from keras_nalu.checkpoints import Checkpoint

LOOPS = ("auto", "fit", "custom")
# The names of the strategies `fit` takes (`keras_nalu.distribute.make_strategy`).
STRATEGIES = _loops.STRATEGIES
VERBOSITIES = ("auto", 0, 1, 2)


def _duration(seconds):
    """`seconds` for a person: "42 s", "3 min 05 s", "2 h 07 min"."""
    seconds = max(0, round(seconds))
    if seconds < 60:
        return f"{seconds} s"
    minutes, seconds = divmod(seconds, 60)
    if minutes < 60:
        return f"{minutes} min {seconds:02d} s"
    hours, minutes = divmod(minutes, 60)
    return f"{hours} h {minutes:02d} min"


def _value(value):
    if isinstance(value, numbers.Real) and not isinstance(value, bool):
        return f"{float(value):.4g}"
    return str(value)


def training_step(model: keras.Model) -> int | None:
    """The training steps `model` has taken (its optimizer's iterations), under
    `model.fit` or `fit`'s custom loop, or `None` when nothing trains it."""
    optimizer = _loops.optimizer_of(model)
    if optimizer is None:
        return None
    return int(keras.ops.convert_to_numpy(optimizer.iterations))


class Progress(keras.callbacks.Callback):
    """One line per evaluation: how far the run is, its latest metrics, the
    time it has taken and an estimate of the time left.

    `fit` prints one after every epoch (a callback); a loop that is not
    `model.fit` calls `update`. The estimate assumes the remaining units
    (epochs, steps) take as long as those done so far in this process: from
    its creation when `done` is given (`fit` creates it just before its
    first epoch), else from its first update (e.g. an evaluation before any
    training, or the first after a resume).

        epoch 3/10 (step 300) - loss 0.0123 - digits 0.95 - 42 s, about 1 min 38 s left

    Args:
        total: Positive integer, the units of the whole run (epochs, steps).
        done: The units done before this process started timing (a resumed
            run's), or `None` (see above).
        unit: The word for a unit in the lines, e.g. `"epoch"`, `"step"`.
        label: Put at the start of every line, e.g. `"NMU"`, or `None`.
        print_fn: Called with each line (default: `print`, flushed).
    """

    def __init__(
        self,
        total: int,
        done: int | None = None,
        unit: str = "epoch",
        label: str | None = None,
        print_fn: Callable[[str], Any] | None = None,
    ) -> None:
        super().__init__()
        self.total = validation.positive_int("total", total)
        self.unit, self.label = unit, label
        self.print_fn = print_fn or functools.partial(print, flush=True)
        self._start = None if done is None else (time.perf_counter(), done)
        self._began = time.perf_counter()

    def on_epoch_end(self, epoch: int, logs: dict[str, Any] | None = None) -> None:
        step = training_step(self.model)
        self.update(epoch + 1, logs, what=None if step is None else f"step {step}")

    def update(
        self, done: int, values: dict[str, Any] | None = None, what: str | None = None
    ) -> str:
        """Prints the line of `done` units of `total`, naming `what` (e.g. the
        run just finished) when given, with `values` (`{name: number or
        text}`); returns it."""
        now = time.perf_counter()
        if self._start is None:
            self._start = (now, done)
        start, start_done = self._start
        parts = [f"{self.unit} {done}/{self.total}" + (f" ({what})" if what else "")]
        parts += [f"{name} {_value(value)}" for name, value in (values or {}).items()]
        took = _duration(now - self._began)
        if done >= self.total:
            timing = f"{took}, done"
        elif done > start_done:
            left = (now - start) / (done - start_done) * (self.total - done)
            timing = f"{took}, about {_duration(left)} left"
        else:
            timing = f"{took}, estimating the time left"
        line = " - ".join([*([self.label] if self.label else []), *parts, timing])
        self.print_fn(line)
        return line


class _RunBar(keras.callbacks.ProgbarLogger):
    """Keras's progress bar, numbering the epochs of the whole run: `fit`
    calls `model.fit` once per epoch, which would number each "1/1"."""

    def __init__(self, epochs):
        super().__init__()
        self._run_epochs = epochs

    def set_params(self, params):
        super().set_params(params)
        self.epochs = self._run_epochs


@dataclasses.dataclass
class FitResult:
    """What `fit` returns.

    Attributes:
        model: The trained model (built in the strategy's scope).
        history: `{name: [value per epoch]}`, as `keras.callbacks.History`,
            over all the epochs including those before a resume.
        epochs: The number of epochs trained, including those before a resume.
        resumed_at: The epoch the run resumed at (0 when it started afresh).
        divergence: `None`, or a message saying where the loss stopped being
            finite (training stopped there).
    """

    model: keras.Model
    history: dict
    epochs: int
    resumed_at: int = 0
    divergence: str | None = None


class StopOnDivergence(keras.callbacks.Callback):
    """Stops training at the first non-finite loss and records where.

    Equivalent to `keras.callbacks.TerminateOnNaN`, with `message` saying the
    epoch and step for the user.
    """

    def __init__(self) -> None:
        super().__init__()
        self.message: str | None = None
        self._epoch = 0

    def on_epoch_begin(self, epoch: int, logs: dict[str, Any] | None = None) -> None:
        self._epoch = epoch

    def on_train_batch_end(
        self, batch: int, logs: dict[str, Any] | None = None
    ) -> None:
        loss = (logs or {}).get("loss")
        if loss is not None and not math.isfinite(float(loss)):
            steps = self.params.get("steps")
            of = f" of {steps}" if steps else ""
            # "by": with steps_per_execution > 1, logs come once per execution.
            self.message = (
                f"diverged: the training loss was {float(loss)} by step "
                f"{batch + 1}{of} of epoch {self._epoch + 1}; training stopped there"
            )
            self.model.stop_training = True


def _uses_ema(optimizer):
    """Whether `optimizer` keeps moving averages of the weights (`use_ema`;
    a `LossScaleOptimizer` passes those of the one it wraps through)."""
    inner = getattr(optimizer, "inner_optimizer", optimizer)
    return bool(getattr(inner, "use_ema", False))


def _write_averages(optimizer, variables):
    """Writes `optimizer`'s moving averages (`use_ema`) into `variables`, as
    copies: on JAX a weight sharing the average's buffer would let the next
    compiled step (which donates the weights' buffers) delete the average."""
    optimizer.finalize_variable_values(variables)
    _assign_values(variables, _copy_values(variables))


def _copy_values(variables):
    """The values of `variables`, as numpy copies."""
    return [keras.ops.convert_to_numpy(v) for v in variables]


def _assign_values(variables, values):
    """Writes `values` (from `_copy_values`) back into `variables`."""
    for variable, value in zip(variables, values, strict=True):
        variable.assign(value)


@contextlib.contextmanager
def moving_averages(
    model: keras.Model, optimizer: keras.optimizers.Optimizer | None = None
) -> Iterator[keras.Model]:
    """Within the block, `model` holds its optimizer's moving averages.

    For an optimizer with `use_ema=True`: evaluate the weights a run will
    end with (e.g. in a callback's `on_epoch_end`) while it trains on its
    own; on leaving the block the model gets its own weights back.

    Args:
        model: A Keras model.
        optimizer: Its optimizer, or `None` for the one training it
            (`model.optimizer`, or the `distribute.Trainer`'s).

    Raises:
        ValueError: The optimizer keeps no moving averages.
    """
    if optimizer is None:
        optimizer = _loops.optimizer_of(model)
    if not _uses_ema(optimizer):
        raise validation.invalid(
            "optimizer", "an optimizer with use_ema=True", optimizer
        )
    variables = model.trainable_variables
    weights = _copy_values(variables)
    _write_averages(optimizer, variables)
    try:
        yield model
    finally:
        _assign_values(variables, weights)


class _MovingAverages(keras.callbacks.Callback):
    """Keeps an `use_ema` optimizer's model training on its own weights.

    Keras's `model.fit` ends by writing the optimizer's moving averages into
    the model. `fit` calls it once per epoch, so each epoch would restart
    from the averages (and on JAX the next call would donate one buffer
    twice, the averages' and the weights'). This keeps the weights at each
    epoch's end and `restore` puts them back; `finish` writes the averages
    in once the run is over.
    """

    def __init__(self, model, optimizer):
        super().__init__()
        self._variables = list(model.trainable_variables)
        self._optimizer = optimizer
        self._weights = None

    def on_epoch_end(self, epoch: int, logs: dict[str, Any] | None = None) -> None:
        self._weights = _copy_values(self._variables)

    def restore(self):
        if self._weights is not None:
            _assign_values(self._variables, self._weights)
        self._weights = None

    def finish(self):
        _write_averages(self._optimizer, self._variables)


class CheckpointAheadError(validation.InvalidValueError):
    """`fit`'s error when the checkpoint of its `config` in `checkpoint_dir`
    holds more epochs than `epochs` asks: `checkpoint_epochs` says how many
    (the checkpoint is left as it was)."""

    def __init__(
        self, epochs: int, checkpoint_epochs: int, checkpoint_dir: Any
    ) -> None:
        super().__init__(
            "epochs",
            f"at least {checkpoint_epochs}, the epochs of the checkpoint of this "
            f"config in {checkpoint_dir} (or another checkpoint_dir)",
            epochs,
        )
        self.checkpoint_epochs = checkpoint_epochs


def fit(
    model_fn: Callable[[], keras.Model],
    data_fn: Callable[[int], Any],
    *,
    loss: Any,
    optimizer_fn: Callable[[], keras.optimizers.Optimizer],
    epochs: int,
    strategy: Any = None,
    loop: str = "auto",
    checkpoint_dir: str | os.PathLike | None = None,
    config: Any = None,
    callbacks: Sequence[keras.callbacks.Callback] = (),
    steps_per_execution: int = 1,
    verbose: str | int = "auto",
) -> FitResult:
    """Trains a model for `epochs` epochs, resumably, on any strategy.

    Args:
        model_fn: A function of no arguments returning a built `keras.Model`,
            called inside the strategy's scope.
        data_fn: A function `data_fn(epoch)` returning that epoch's batches of
            `(x, y)`: a `tf.data.Dataset` or a `keras.utils.PyDataset`, read
            in order. For an exact resume it must depend only on `epoch`.
        loss: A Keras loss (name, `keras.losses.Loss` or function), or a list
            of them, one per output.
        optimizer_fn: A function of no arguments returning a new
            `keras.optimizers.Optimizer`. With `use_ema=True` the returned
            model holds the moving averages of its weights, as after one
            `model.fit` call of all the epochs.
        epochs: Positive integer, the number of epochs. It is not part of the
            resume check: a run given more epochs continues the checkpoint
            of one given fewer, with the same `config` (its epochs are the
            first of the longer run's when `data_fn(epoch)` depends only on
            `epoch`); fewer epochs than the checkpoint holds are a
            ValueError.
        strategy: A `tf.distribute.Strategy`, `"default"`, `"mirrored"`,
            `"multi-worker"`, or `None` (the current strategy).
        loop: `"fit"` (`model.fit`), `"custom"` (`distribute.Trainer`) or
            `"auto"`: the custom loop under a multi-worker strategy, which
            `model.fit` does not support, else `model.fit`.
        checkpoint_dir: A folder for this run's checkpoint, or `None` for
            no checkpoint. The run owns it: the chief locks it before
            reading it and releases it when `fit` returns or raises (a
            `keras_nalu.checkpoints.Checkpoint`: one file,
            `checkpoint.npz`, replaced atomically after every epoch, and
            the lock file `.checkpoint.lock`), so a second run on the same
            folder fails at once. Only the chief writes it; under a
            multi-worker strategy on several hosts it must be on a shared
            filesystem. `remove_checkpoint` deletes it.
        config: A JSON-serializable description of the run. A checkpoint
            made with another `config` is not resumed: a warning is logged
            (the logger `keras_nalu.checkpoints`) and the run starts afresh
            and replaces it, unless `keep_checkpoint` marked it kept (a
            ValueError naming `checkpoint_dir`): the policy of
            `keras_nalu.checkpoints.Checkpoint.load_for`.
        callbacks: Keras callbacks, called as `model.fit` calls them (each
            epoch is one `model.fit` call, so `on_train_begin` and
            `on_train_end` come once per epoch; with `use_ema`,
            `on_train_end` sees the moving averages and `on_epoch_end` the
            weights being trained, as in `model.fit`). A
            callback whose state must survive a resume can define
            `get_checkpoint_state()` (returning `{name: numpy array}`, of
            numbers or booleans) and `set_checkpoint_state(state)`; values
            it adds to `logs` in `on_epoch_end` are kept in the history.
        steps_per_execution: Positive integer, passed to `model.compile`
            (the custom loop runs one step per call).
        verbose: `"auto"` (the default: 1 when standard output is a
            terminal, else 2), 0 (silent), 1 (Keras's progress bar through
            each epoch, the epochs numbered over the whole run, and a
            `Progress` line after it) or 2 (only the `Progress` line after
            each epoch: the epoch, the loss and what the callbacks added to
            the logs, the time taken and an estimate of the time left; for
            logs and CI).

    Returns:
        A `FitResult`.

    Raises:
        ValueError: An argument is invalid, or the checkpoint in
            `checkpoint_dir` was written by another model (other variables),
            is a kept one of another `config`, or is not a whole checkpoint
            (cut short, damaged, another file: the message names it).
        CheckpointAheadError: The checkpoint of this `config` holds more
            epochs than `epochs` (a ValueError).
        keras_nalu.checkpoints.CheckpointInUseError: Another run holds
            `checkpoint_dir` (a RuntimeError naming the folder and that
            run's process id).
    """
    for name, value in (
        ("model_fn", model_fn),
        ("data_fn", data_fn),
        ("optimizer_fn", optimizer_fn),
    ):
        validation.function(name, value)
    epochs = validation.positive_int("epochs", epochs)
    steps_per_execution = validation.positive_int(
        "steps_per_execution", steps_per_execution
    )
    validation.one_of("loop", loop, LOOPS)
    validation.one_of("verbose", verbose, VERBOSITIES)
    if verbose == "auto":
        verbose = 1 if sys.stdout.isatty() else 2
    callbacks = list(callbacks)
    for callback in callbacks:
        if not isinstance(callback, keras.callbacks.Callback):
            raise validation.invalid(
                "callbacks", "a list of keras.callbacks.Callback", callback
            )
    try:
        json.dumps(config)
    except TypeError as error:
        raise validation.invalid(
            "config", f"a JSON-serializable value ({error})", config
        ) from None
    strategy, custom = _strategy_and_loop(strategy, loop)
    checkpoint = None
    if checkpoint_dir is not None:
        checkpoint = _RunCheckpoint(checkpoint_dir, config)
    try:
        if checkpoint is not None and strategy.is_chief():
            checkpoint.lock()  # before any work: a second run fails at once
            checkpoint.check_writable()
        return _fit(
            model_fn,
            data_fn,
            loss,
            optimizer_fn,
            epochs,
            strategy,
            custom,
            checkpoint,
            callbacks,
            steps_per_execution,
            verbose,
        )
    finally:
        if checkpoint is not None:
            checkpoint.close()


def _fit(
    model_fn,
    data_fn,
    loss,
    optimizer_fn,
    epochs,
    strategy,
    custom,
    checkpoint,
    callbacks,
    steps_per_execution,
    verbose,
):
    """`fit` once its arguments are checked and its folder locked."""
    if custom:
        trainer = strategy.trainer(model_fn, loss, optimizer_fn)
        model, optimizer = trainer.model, trainer.optimizer
    else:
        model, optimizer = _loops.build(model_fn, optimizer_fn, strategy.scope())
        with strategy.scope():
            model.compile(
                optimizer=optimizer, loss=loss, steps_per_execution=steps_per_execution
            )
    start, history, divergence = 0, {}, None
    saved = (
        None if checkpoint is None else checkpoint.restore(model, optimizer, callbacks)
    )
    if saved is not None:
        start, history, divergence = saved
        if start > epochs:  # kept from a longer run: never cut it short
            raise CheckpointAheadError(epochs, start, checkpoint.given)
    guard = StopOnDivergence()
    averages = _MovingAverages(model, optimizer) if _uses_ema(optimizer) else None
    # After the callbacks, so that they print what those add to the logs.
    shown = [_RunBar(epochs)] if verbose == 1 else []
    shown += [Progress(epochs, done=start)] if verbose else []
    epoch = start
    while epoch < epochs and divergence is None:
        data = _checked_batches(data_fn(epoch), epoch)
        run_callbacks = [*callbacks, *shown, guard, *([averages] if averages else [])]
        if custom:
            logs = trainer.fit(
                data,
                epochs=epoch + 1,
                initial_epoch=epoch,
                callbacks=run_callbacks,
                verbose=int(verbose == 1),
            ).history
        else:
            logs = model.fit(
                data,
                epochs=epoch + 1,
                initial_epoch=epoch,
                callbacks=run_callbacks,
                shuffle=False,
                verbose=int(verbose == 1),
            ).history
        if averages is not None:
            averages.restore()
        for name, values in logs.items():
            history.setdefault(name, []).extend(float(v) for v in values)
        divergence = guard.message
        epoch += 1
        if checkpoint is not None and strategy.is_chief():
            try:
                checkpoint.save(epoch, history, divergence, callbacks)
            except OSError as error:  # e.g. a full disk: keep training, say so
                warnings.warn(
                    f"Could not save the checkpoint of epoch {epoch} in "
                    f"{checkpoint.directory} ({error}); the previous one stays "
                    "there, and training goes on: the model `fit` returns has "
                    "every epoch.",
                    stacklevel=2,
                )
    if averages is not None:
        averages.finish()
    return FitResult(model, history, epoch, start, divergence)


def _checked_batches(data, epoch):
    """`data_fn(epoch)`'s value, refused with a clear error when it is not a
    dataset of batches (arrays, a tuple of them, `None`)."""
    if data is None or isinstance(data, (tuple, list, dict, np.ndarray)):
        what = "None" if data is None else f"a {type(data).__name__}"
        raise ValueError(
            "Received an invalid value for `data_fn`, expected a function "
            "returning the epoch's batches of (x, y): a tf.data.Dataset or a "
            f"keras.utils.PyDataset. Received: data_fn({epoch}) returned {what}"
            + (
                " (arrays: wrap them in a keras.utils.PyDataset or "
                "tf.data.Dataset.from_tensor_slices(...).batch(n))"
                if data is not None
                else ""
            )
        )
    return data


class _NoStrategy:
    """What `fit` asks of a strategy, where none is used: on jax and torch,
    or the default one, without importing TensorFlow."""

    def scope(self):
        return contextlib.nullcontext()

    def is_chief(self):
        return True


class _TensorFlowStrategy:
    """What `fit` asks of a `tf.distribute` strategy (`keras_nalu.distribute`,
    imported here: only this path needs TensorFlow)."""

    def __init__(self, strategy):
        from keras_nalu import distribute

        self._distribute = distribute
        self.strategy = distribute.get_strategy(strategy)

    def scope(self):
        return self.strategy.scope()

    def is_chief(self):
        return self._distribute.is_chief(self.strategy)

    def is_multi_worker(self):
        return self._distribute.is_multi_worker(self.strategy)

    def is_distributed(self):
        """Whether it is another than TensorFlow's default strategy."""
        default = self._distribute.get_strategy(None)
        return type(self.strategy) is not type(default)

    def trainer(self, model_fn, loss, optimizer_fn):
        return self._distribute.Trainer(model_fn, loss, optimizer_fn, self.strategy)


def _strategy_and_loop(strategy, loop):
    """`(strategy, custom)`: the strategy `fit` trains under (a `_NoStrategy`
    for `None` or `"default"` on jax and torch, which need no TensorFlow) and
    whether it runs the custom loop; raises where the backend cannot."""
    backend = keras.backend.backend()
    if isinstance(strategy, str):
        validation.one_of("strategy", strategy, STRATEGIES)
    if backend != "tensorflow" and (strategy is None or isinstance(strategy, str)):
        if loop != "custom" and strategy in (None, "default"):
            return _NoStrategy(), False
        _refuse_backend(backend, strategy, loop)  # without importing TensorFlow
    wrapped = _TensorFlowStrategy(strategy)
    custom = loop == "custom" or (loop == "auto" and wrapped.is_multi_worker())
    if backend != "tensorflow" and (custom or wrapped.is_distributed()):
        _refuse_backend(backend, type(wrapped.strategy).__name__, loop)
    return wrapped, custom


def _refuse_backend(backend, strategy, loop):
    raise ValueError(
        "tf.distribute strategies and the custom loop need the tensorflow "
        f"backend; this process runs KERAS_BACKEND={backend!r}. Received: "
        f"strategy={strategy}, loop={loop!r}. On {backend}, train with the "
        "default strategy and loop='fit' or 'auto'."
    )


def keep_checkpoint(checkpoint_dir: str | os.PathLike) -> None:
    """Marks the checkpoint in `checkpoint_dir` kept, once its run finished:
    `fit` resumes or continues it as before, and refuses to replace it with
    a run of another `config` (a ValueError, where an unkept checkpoint is
    replaced with a warning). `remove_checkpoint` deletes it and its mark.

    Args:
        checkpoint_dir: The folder, as passed to `fit`. Without a checkpoint
            in it, nothing is marked.

    Raises:
        keras_nalu.checkpoints.CheckpointInUseError: A run holds the folder.
    """
    Checkpoint(checkpoint_dir).keep()


def remove_checkpoint(checkpoint_dir: str | os.PathLike) -> None:
    """Deletes the checkpoint in `checkpoint_dir`, then the folder if empty.

    Deletes only the checkpoint `fit` writes there, what a kill while saving
    leaves, and the TensorFlow-format checkpoint files of keras_nalu 0.2 and
    earlier; other files are never touched.

    Args:
        checkpoint_dir: The folder, as passed to `fit`. It may not exist.

    Raises:
        keras_nalu.checkpoints.CheckpointInUseError: A run holds the folder.
    """
    Checkpoint(checkpoint_dir).remove()


class _RunCheckpoint(Checkpoint):
    """`fit`'s checkpoint in `directory`: the values of the model's and the
    optimizer's Keras variables (listed, because the object graph of the model
    does not reach a `SeedGenerator`'s state), the callbacks' states, and as
    JSON the epoch, the history, the divergence, the `config` and a `layout`
    (the variables' shapes and dtypes) checked before a resume."""

    def __init__(self, directory, config):
        super().__init__(directory)
        self.given = directory  # as the caller wrote it, for messages
        self.config = json.dumps(config, sort_keys=True)
        self.variables = []
        self.signature = []

    def restore(self, model, optimizer, callbacks):
        """Takes the variables of `model` and `optimizer` as those it saves,
        and restores the checkpoint into them and `callbacks`.

        Returns:
            `(epoch, history, divergence)`, or `None` when there is no
            checkpoint or it was made with another `config` (with a warning;
            `Checkpoint.load_for`'s policy).

        Raises:
            ValueError: The checkpoint holds other variables (another model
                or optimizer wrote it), is a kept one of another `config`,
                or is not one `fit` can read.
        """
        self.variables = [*model.variables, *optimizer.variables]
        self.signature = [[list(v.shape), str(v.dtype)] for v in self.variables]
        saved = self.load_for(self.config, layout=self.signature)
        if saved is None:
            return None
        values, named, state = saved
        for variable, value in zip(self.variables, values, strict=True):
            variable.assign(value)
        for i, callback in enumerate(callbacks):
            if hasattr(callback, "set_checkpoint_state"):
                prefix = f"{i}/"
                callback.set_checkpoint_state(
                    {
                        k[len(prefix) :]: v
                        for k, v in named.items()
                        if k.startswith(prefix)
                    }
                )
        return state["epoch"], state["history"], state["divergence"]

    def save(self, epoch, history, divergence, callbacks):
        """Saves the checkpoint of the end of epoch `epoch` (1-based)."""
        named = {
            f"{i}/{key}": np.asarray(value)
            for i, callback in enumerate(callbacks)
            if hasattr(callback, "get_checkpoint_state")
            for key, value in callback.get_checkpoint_state().items()
        }
        state = {
            "epoch": epoch,
            "history": history,
            "divergence": divergence,
            "config": self.config,
            "variables": self.signature,
        }
        values = [keras.ops.convert_to_numpy(v) for v in self.variables]
        super().save(values, state, named=named)
