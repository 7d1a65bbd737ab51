"""Initializers of Madsen & Johansen (2020) for the NAU and the NMU.

Both draw uniformly around a center, with Glorot's width capped so that no
weight starts at a value the unit's clipping would saturate.

Example:

>>> import keras
>>> from keras_nalu.initializers import NAUUniform, NMUUniform
>>> w = keras.ops.convert_to_numpy(NMUUniform(seed=0)((2, 1)))
>>> bool(((0.25 <= w) & (w <= 0.75)).all())
True
>>> w = keras.ops.convert_to_numpy(NAUUniform(seed=0)((100, 2)))
>>> bool((abs(w) <= (6 / 102) ** 0.5).all())
True
"""

import math
from typing import Any

import keras


class _CappedGlorotUniform(keras.initializers.GlorotUniform):
    center = 0.0
    cap = 0.5

    def __call__(self, shape, dtype=None):
        if len(shape) < 2:
            raise ValueError(
                f"Received an invalid value for `shape`, expected a kernel shape "
                f"(..., fan_in, fan_out) of rank >= 2. Received: shape={shape}"
            )
        receptive = math.prod(shape[:-2])
        fan_in, fan_out = shape[-2] * receptive, shape[-1] * receptive
        limit = min(self.cap, math.sqrt(6.0 / (fan_in + fan_out)))
        return keras.random.uniform(
            shape,
            minval=self.center - limit,
            maxval=self.center + limit,
            seed=self.seed,
            dtype=dtype,
        )


@keras.saving.register_keras_serializable(package="keras_nalu")
class NAUUniform(_CappedGlorotUniform):
    """`U[-r, r]` with `r = min(0.5, sqrt(6 / (fan_in + fan_out)))`: the NAU's.

    It takes the arguments of `keras.initializers.GlorotUniform`: `seed`, an
    integer or `keras.random.SeedGenerator`, and the others Keras's version
    has (`input_axes`, `output_axes` in Keras 3.15).
    """

    def __init__(
        self, seed: int | keras.random.SeedGenerator | None = None, **kwargs: Any
    ) -> None:
        super().__init__(seed=seed, **kwargs)


@keras.saving.register_keras_serializable(package="keras_nalu")
class NMUUniform(_CappedGlorotUniform):
    """`U[center - r, center + r]`, `r = min(0.25, sqrt(6 / (fan_in + fan_out)))`.

    The NMU's. With the default `center=0.5` (Madsen & Johansen's) every weight
    starts halfway between "leave the input out" (0) and "multiply it in" (1).
    On inputs of both signs a higher center keeps the NMU from collapsing to
    the constant 1 early in training (measured in the docs, "Benchmark of the
    units": `center=0.75`).

    Args:
        center: Float in `[0.25, 0.75]`, the middle of the range.
        seed: An integer or `keras.random.SeedGenerator`, as for Keras's
            initializers.
    """

    cap = 0.25

    def __init__(
        self, center: float = 0.5, seed: int | None = None, **kwargs: Any
    ) -> None:
        ok = isinstance(center, (int, float)) and not isinstance(center, bool)
        if not (ok and 0.25 <= center <= 0.75):
            raise ValueError(
                "Received an invalid value for `center`, expected a number in "
                f"[0.25, 0.75]. Received: center={center!r}"
            )
        super().__init__(seed=seed, **kwargs)  # Keras's own config keys
        self.center = float(center)

    def get_config(self):
        return {**super().get_config(), "center": self.center}
