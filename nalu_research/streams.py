"""The engine's batches: a counter-based draw per run, keyed by its stream.

A run of the seed-batched engine draws its batch at step `t` as a pure
function of its stream id and `t` (`counter_uniform`), so its batches do not
depend on the runs beside it, and a resumed run draws the same ones.
"""

import zlib

import numpy as np

from nalu_research.tasks.static_arithmetic import TARGETS

# The 32-bit finalizer "lowbias32" (C. Wellons, hash-prospector): a bijection
# of 32-bit integers whose output bits each flip with probability 0.5 +- 0.002
# when one input bit flips. Written in int32 with wrapping products, which
# every backend computes alike; `>>` on int32 is arithmetic, so each shift is
# masked to its logical result.
_MIX = ((16, 0x7FEB352D), (15, 0x846CA68B - 2**32), (16, None))


def _mix(x):
    from keras import ops

    for shift, multiplier in _MIX:
        x = ops.bitwise_xor(
            x, ops.bitwise_and(ops.right_shift(x, shift), (1 << (32 - shift)) - 1)
        )
        if multiplier is not None:
            x = x * multiplier
    return x


def counter_uniform(streams, step, shape, low, high):
    """Uniform floats in `[low, high)`, of shape `(len(streams), *shape)`.

    Element `e` of stream `s` at step `t` is `_mix(e ^ _mix(t ^ _mix(s)))`,
    its top 24 bits scaled to `[0, 1)`: a pure function of `(s, t, e)`, so
    each stream's values do not depend on the other streams, and a step
    draws the same values whenever it is run. A continuous uniform never
    draws exactly 0, but this grid of `2**24` values does when 0 is on it
    (U[-2, 2]: once in 16.8 million draws), and a target such as `a / 0` is
    then infinite (the run's weights turn NaN): such a draw takes the middle
    of its grid step, half a step above 0. No other value changes. Cheap on
    every backend (elementwise integer arithmetic, which XLA vectorizes), where a
    generator such as Threefry or Philox per stream costs several times the
    rest of a training step here.

    Args:
        streams: int32 tensor `(runs,)`, one stream id per run.
        step: Integer scalar (tensor), the step.
        shape: Shape of each stream's draw.
        low: Lower bound.
        high: Upper bound.
    """
    from keras import ops

    size = int(np.prod(shape))
    keys = _mix(
        ops.bitwise_xor(_mix(ops.cast(streams, "int32")), ops.cast(step, "int32"))
    )
    counters = ops.arange(size, dtype="int32")
    bits = _mix(ops.bitwise_xor(counters[None, :], keys[:, None]))
    unit = ops.cast(ops.bitwise_and(ops.right_shift(bits, 8), 0xFFFFFF), "float32")
    unit = unit * (1.0 / 2**24)
    x = low + (high - low) * unit
    x = ops.where(x == 0.0, (high - low) * 2.0**-25, x)
    return ops.reshape(x, (-1, *shape))


def stream_id(seed, target, interpolation=None):
    """The id of the batch stream of the run `(target, seed)` (an int32), or
    of `(target, interpolation, seed)` on an interpolation range of the
    benchmark's `ranges`.

    The paper's operations keep the ids they had when they were the only
    targets, `seed * 6 + i` for the `i`-th of `TARGETS`; any other target
    (an expression), and any run of a benchmark of `ranges`, takes a
    negative id hashed from its name, the seed and the range, apart from
    those (so the runs of two ranges draw apart, not one stream rescaled).
    """
    if interpolation is not None:
        low, high = interpolation
        key = f"{target}\0{seed}\0{float(low)!r},{float(high)!r}"
        return -1 - zlib.crc32(key.encode()) % 2**31
    if target in TARGETS:
        return seed * len(TARGETS) + list(TARGETS).index(target)
    return -1 - zlib.crc32(f"{target}\0{seed}".encode()) % 2**31
