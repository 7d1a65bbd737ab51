"""What `keras_nalu.training` and `keras_nalu.distribute` share, in a module
that imports neither: the names of the strategies, building a model and its
optimizer, and which optimizer trains a model.

`training` imports `distribute` (lazily: only a `tf.distribute` strategy
needs TensorFlow), never the reverse, so the library has no import circle.
"""

import contextlib
import weakref
from collections.abc import Callable
from contextlib import AbstractContextManager
from typing import Any

import keras

from keras_nalu import validation

# The names of the strategies `keras_nalu.training.fit` takes
# (`keras_nalu.distribute.make_strategy`).
STRATEGIES = ("default", "mirrored", "multi-worker")
# The optimizer of each model a `keras_nalu.distribute.Trainer` trains (its
# loop does not compile the model, so it has no `model.optimizer`).
_TRAINER_OPTIMIZERS: weakref.WeakKeyDictionary[Any, Any] = weakref.WeakKeyDictionary()


def build(
    model_fn: Callable[[], keras.Model],
    optimizer_fn: Callable[[], keras.optimizers.Optimizer],
    scope: AbstractContextManager | None = None,
) -> tuple[keras.Model, keras.optimizers.Optimizer]:
    """Calls `model_fn` and `optimizer_fn` inside `scope` (a context manager,
    e.g. a `tf.distribute` strategy's scope, or `None`) and builds the
    optimizer for the model; returns `(model, optimizer)`.

    Raises a clear error unless `model_fn` returns a built `keras.Model` and
    `optimizer_fn` a `keras.optimizers.Optimizer`.
    """
    with scope if scope is not None else contextlib.nullcontext():
        model = model_fn()
        if not isinstance(model, keras.Model):
            raise validation.invalid(
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
            raise validation.invalid(
                "optimizer_fn",
                "a function returning a keras.optimizers.Optimizer",
                optimizer,
            )
        # Slot variables must exist before the first (compiled) step.
        optimizer.build(model.trainable_variables)
    return model, optimizer


def register_trainer_optimizer(
    model: keras.Model, optimizer: keras.optimizers.Optimizer
) -> None:
    """Records that `optimizer` trains `model` outside `model.fit` (a
    `keras_nalu.distribute.Trainer`'s loop), for `optimizer_of`."""
    _TRAINER_OPTIMIZERS[model] = optimizer


def optimizer_of(model: keras.Model) -> keras.optimizers.Optimizer | None:
    """`model.optimizer` when Keras compiled it, else the optimizer
    `register_trainer_optimizer` recorded for it, else `None`."""
    optimizer = getattr(model, "optimizer", None)
    return optimizer if optimizer is not None else _TRAINER_OPTIMIZERS.get(model)
