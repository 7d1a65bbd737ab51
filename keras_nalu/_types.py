"""The types the public API's hints name: what Keras accepts for a weight's
initializer, regularizer and constraint (an identifier, a config, an object
or a function), and array-like data."""

from collections.abc import Callable
from typing import Any, TypeAlias

import keras

InitializerLike: TypeAlias = (
    str | dict[str, Any] | keras.initializers.Initializer | Callable[..., Any]
)
RegularizerLike: TypeAlias = (
    str | dict[str, Any] | keras.regularizers.Regularizer | Callable[..., Any]
)
ConstraintLike: TypeAlias = (
    str | dict[str, Any] | keras.constraints.Constraint | Callable[..., Any]
)
# Arrays: NumPy arrays, tensors of any backend, nested lists of numbers (what
# `keras.ops.convert_to_tensor` takes; Keras types them as Any too).
ArrayLike: TypeAlias = Any
# A tensor of the Keras backend in use (tf.Tensor, jax.Array, torch.Tensor).
Tensor: TypeAlias = Any
