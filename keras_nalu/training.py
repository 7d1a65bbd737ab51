"""Training that survives interruption and says when it diverges, on any
`tf.distribute` strategy: the loop every example runs.

`fit` trains one model epoch by epoch. With the default strategy or
`tf.distribute.MirroredStrategy` each epoch is a `model.fit` call; under
`tf.distribute.MultiWorkerMirroredStrategy`, which Keras 3's `model.fit` does
not support, it is `keras_nalu.distribute.Trainer.fit`, the same loop written
out. The callbacks see the same calls either way.

After every epoch, `fit` checkpoints the model's variables (its weights and
the states of its random generators, e.g. dropout's), the optimizer's state,
the epoch and the history into one file, written beside and renamed over the
previous one, so a kill at any instant leaves a whole checkpoint. Run
again with the same `checkpoint_dir` and `config`, it resumes at the epoch
after the last checkpoint. Each epoch's batches come from `data_fn(epoch)`,
so when they depend only on the epoch (fresh batches drawn from a seed and
the epoch, or a fixed dataset in a fixed order) the resumed run ends with the
same weights as an uninterrupted one.

A non-finite loss stops the run at once (as `keras.callbacks.TerminateOnNaN`
does) and `FitResult.divergence` says at which epoch and step.
"""

import dataclasses
import io
import json
import math
import os
from pathlib import Path

import keras
import numpy as np

from keras_nalu import _validation, distribute

LOOPS = ("auto", "fit", "custom")
_CHECKPOINT = "checkpoint.npz"


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

    def __init__(self):
        super().__init__()
        self.message = None
        self._epoch = 0

    def on_epoch_begin(self, epoch, logs=None):
        self._epoch = epoch

    def on_train_batch_end(self, batch, logs=None):
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


def fit(
    model_fn,
    data_fn,
    *,
    loss,
    optimizer_fn,
    epochs,
    strategy=None,
    loop="auto",
    checkpoint_dir=None,
    config=None,
    callbacks=(),
    steps_per_execution=1,
    verbose=0,
):
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
            `keras.optimizers.Optimizer`.
        epochs: Positive integer, the number of epochs.
        strategy: A `tf.distribute.Strategy`, `"default"`, `"mirrored"`,
            `"multi-worker"`, or `None` (the current strategy).
        loop: `"fit"` (`model.fit`), `"custom"` (`distribute.Trainer`) or
            `"auto"`: the custom loop under a multi-worker strategy, which
            `model.fit` does not support, else `model.fit`.
        checkpoint_dir: A folder for this run's checkpoint, or `None` for no
            checkpoint. Only the chief writes it; under a multi-worker
            strategy on several hosts it must be on a shared filesystem.
        config: A JSON-serializable description of the run. A checkpoint
            made with another `config` is not resumed (the run starts afresh
            and replaces it).
        callbacks: Keras callbacks, called as `model.fit` calls them. A
            callback whose state must survive a resume can define
            `get_checkpoint_state()` (returning `{name: numpy array}`) and
            `set_checkpoint_state(state)`; values it adds to `logs` in
            `on_epoch_end` are kept in the history.
        steps_per_execution: Positive integer, passed to `model.compile`
            (the custom loop runs one step per call).
        verbose: 0, 1 or 2, as in `model.fit`.

    Returns:
        A `FitResult`.
    """
    for name, value in (
        ("model_fn", model_fn),
        ("data_fn", data_fn),
        ("optimizer_fn", optimizer_fn),
    ):
        _validation.function(name, value)
    epochs = _validation.positive_int("epochs", epochs)
    steps_per_execution = _validation.positive_int(
        "steps_per_execution", steps_per_execution
    )
    _validation.one_of("loop", loop, LOOPS)
    _validation.one_of("verbose", verbose, (0, 1, 2))
    callbacks = list(callbacks)
    for callback in callbacks:
        if not isinstance(callback, keras.callbacks.Callback):
            raise _validation._invalid(
                "callbacks", "a list of keras.callbacks.Callback", callback
            )
    try:
        json.dumps(config)
    except TypeError as error:
        raise _validation._invalid(
            "config", f"a JSON-serializable value ({error})", config
        ) from None
    strategy = distribute.get_strategy(strategy)
    custom = loop == "custom" or (
        loop == "auto" and distribute.is_multi_worker(strategy)
    )

    if custom:
        trainer = distribute.Trainer(model_fn, loss, optimizer_fn, strategy)
        model, optimizer = trainer.model, trainer.optimizer
    else:
        model, optimizer = distribute.build_in_scope(strategy, model_fn, optimizer_fn)
        with strategy.scope():
            model.compile(
                optimizer=optimizer, loss=loss, steps_per_execution=steps_per_execution
            )

    checkpoint = None
    if checkpoint_dir is not None:
        checkpoint = Path(checkpoint_dir) / _CHECKPOINT
    # `variables`, not `weights`: the random generators' states (dropout) too.
    variables = list(model.variables) + list(optimizer.variables)
    start, history, divergence = 0, {}, None
    saved = None
    if checkpoint is not None:
        saved = load_checkpoint(checkpoint, variables, config=config)
    if saved is not None:
        state, arrays = saved
        start, history, divergence = (
            state[k] for k in ("epoch", "history", "divergence")
        )
        _restore_callbacks(callbacks, arrays)
    guard = StopOnDivergence()
    epoch = start
    while epoch < epochs and divergence is None:
        data = data_fn(epoch)
        run_callbacks = [*callbacks, guard]
        if custom:
            logs = trainer.fit(
                data,
                epochs=epoch + 1,
                initial_epoch=epoch,
                callbacks=run_callbacks,
                verbose=min(verbose, 1),
            ).history
        else:
            logs = model.fit(
                data,
                epochs=epoch + 1,
                initial_epoch=epoch,
                callbacks=run_callbacks,
                shuffle=False,
                verbose=verbose,
            ).history
        for name, values in logs.items():
            history.setdefault(name, []).extend(float(v) for v in values)
        divergence = guard.message
        epoch += 1
        if checkpoint is not None and distribute.is_chief(strategy):
            save_checkpoint(
                checkpoint,
                variables,
                {"epoch": epoch, "history": history, "divergence": divergence},
                config=config,
                arrays=_callback_arrays(callbacks),
            )
    return FitResult(model, history, epoch, start, divergence)


def remove_checkpoint(checkpoint_dir):
    """Deletes the checkpoint `fit` wrote in `checkpoint_dir`, and the folder
    when nothing else is left in it. Other files are never touched."""
    folder = Path(checkpoint_dir)
    for name in (_CHECKPOINT, _CHECKPOINT + ".partial"):
        (folder / name).unlink(missing_ok=True)
    if folder.is_dir() and not any(folder.iterdir()):
        folder.rmdir()


def save_checkpoint(path, variables, state, *, config=None, arrays=None):
    """Writes `variables`, `state` and `arrays` into one file at `path`,
    atomically: written beside `path`, synced, then renamed over it.

    Args:
        path: The checkpoint file (its folder is created).
        variables: Keras or TensorFlow variables (anything with `.numpy()`).
        state: A JSON-serializable dict (epoch, history, ...).
        config: A JSON-serializable description of the run, checked by
            `load_checkpoint`.
        arrays: A dict of extra numpy arrays.
    """
    path = Path(path)
    values = {f"variable_{i}": v.numpy() for i, v in enumerate(variables)}
    values.update({f"array/{k}": np.asarray(v) for k, v in (arrays or {}).items()})
    metadata = {
        "config": json.dumps(config, sort_keys=True),
        "state": state,
        "variables": len(variables),
    }
    values["metadata"] = np.array(json.dumps(metadata))
    buffer = io.BytesIO()
    np.savez(buffer, **values)
    path.parent.mkdir(parents=True, exist_ok=True)
    partial = path.with_name(path.name + ".partial")
    with open(partial, "wb") as file:
        file.write(buffer.getvalue())
        file.flush()
        os.fsync(file.fileno())
    os.replace(partial, path)


def load_checkpoint(path, variables, *, config=None):
    """Restores a `save_checkpoint` file into `variables`.

    Returns `(state, arrays)`, or `None` when there is no file at `path` or it
    was written for another `config` (a message says so).

    Raises:
        ValueError: the file holds another number of variables (another
            model wrote it).
    """
    path = Path(path)
    if not path.exists():
        return None
    with np.load(path, allow_pickle=False) as saved:
        metadata = json.loads(str(saved["metadata"]))
        if metadata["config"] != json.dumps(config, sort_keys=True):
            print(f"{path} is from another configuration: starting afresh")
            return None
        if metadata["variables"] != len(variables):
            raise ValueError(
                f"The checkpoint {path} holds {metadata['variables']} variables "
                f"but this model and optimizer have {len(variables)}; it was "
                "written by another model. Delete it or use another "
                "checkpoint_dir."
            )
        for i, variable in enumerate(variables):
            variable.assign(saved[f"variable_{i}"])
        arrays = {
            key[len("array/") :]: saved[key]
            for key in saved.files
            if key.startswith("array/")
        }
    return metadata["state"], arrays


def _callback_arrays(callbacks):
    arrays = {}
    for i, callback in enumerate(callbacks):
        if hasattr(callback, "get_checkpoint_state"):
            for key, value in callback.get_checkpoint_state().items():
                arrays[f"callback_{i}/{key}"] = value
    return arrays


def _restore_callbacks(callbacks, arrays):
    for i, callback in enumerate(callbacks):
        if hasattr(callback, "set_checkpoint_state"):
            prefix = f"callback_{i}/"
            callback.set_checkpoint_state(
                {k[len(prefix) :]: v for k, v in arrays.items() if k.startswith(prefix)}
            )
