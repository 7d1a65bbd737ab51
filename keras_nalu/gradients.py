"""Gradients and compilation of plain functions on the Keras backend.

Keras has no backend-neutral `value_and_grad`; the seed-batched engine of the
research harness trains through these, and the tests of the units' gradients
take them with them.
"""

from collections.abc import Callable
from typing import Any

import keras


def value_and_grad(fn: Callable[..., Any]) -> Callable[..., Any]:
    """`fn(params, *args) -> (fn(...), d fn / d params)` on the Keras backend:
    `params` a list of tensors, `fn` returning a scalar."""
    backend = keras.backend.backend()
    if backend == "jax":
        import jax

        return jax.value_and_grad(fn)
    if backend == "torch":
        import torch

        def torch_value_and_grad(params, *args):
            params = [p.detach().requires_grad_(True) for p in params]
            value = fn(params, *args)
            return value.detach(), list(torch.autograd.grad(value, params))

        return torch_value_and_grad
    if backend != "tensorflow":
        raise ValueError(
            "Gradients are taken on the tensorflow, jax and torch backends. "
            f"Received: KERAS_BACKEND={backend!r}"
        )

    import tensorflow as tf

    def tf_value_and_grad(params, *args):
        with tf.GradientTape() as tape:
            tape.watch(params)
            value = fn(params, *args)
        return value, tape.gradient(value, params)

    return tf_value_and_grad


def compiled(fn: Callable[..., Any]) -> Callable[..., Any]:
    """`fn` compiled by the backend: `jax.jit`, `tf.function` with XLA, or
    as is on torch (eager)."""
    backend = keras.backend.backend()
    if backend == "jax":
        import jax

        return jax.jit(fn)
    if backend == "tensorflow":
        import tensorflow as tf

        return tf.function(fn, jit_compile=True)
    return fn
