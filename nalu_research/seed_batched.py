"""Train one model per seed, all seeds in one compiled program.

The static arithmetic task of Madsen & Johansen (2020): every seed draws its own
pair of slices, its own initial weights and its own stream of fresh batches, and
the models of all seeds train side by side along a leading seed axis.

One source of truth: the engine reads everything a layer defines from the
layer. A benchmark resolves its model once (`EngineModel`): its configured
layers, one per position (`keras_nalu.NAU`, ..., or a user's registered
unit, with the benchmark's layer options; `keras.layers.Dense` for the
MLPs), and every part of the engine reads those layers: the math is each
unit's `math` on the runs' stacked weights, the penalty its `penalty` on
its `penalty_schedule`, the sparsity error its `effective_weights` against
its `exact_values`, and a run's Keras model (`keras_model`) is a copy of
them. A seed's initial weights are those of a copy of the layers built for
that seed, every random initializer the layers create their weights with
drawing from one `keras.random.SeedGenerator(seed)`; the clipping after
each update is the layers' own weight constraint; and the optimizer is
`keras.optimizers.Adam` (its learning rate a number or a Keras
learning-rate schedule), whose update is elementwise, so each seed's slice of a
stacked weight trains exactly as it would alone, and a seed that diverges to
NaN does not touch the others.

The loop runs on any Keras backend (`keras.ops`, and Keras's optimizer applied
statelessly), compiled by the backend's own compiler: `jax.jit`,
`tf.function(jit_compile=True)` (XLA), or eagerly on torch. The batches are
drawn inside the compiled loop by a counter-based hash of `(run, step,
element)` (`counter_uniform`), so a run's stream depends only on its seed and
target and on the step, never on the runs beside it, and a resumed run
draws the same batches. `StaticBenchmark.run` checkpoints through
`keras_nalu.checkpoints.Checkpoint`, the mechanism `keras_nalu.training.fit`
uses, with its resume policy (`Checkpoint.load_for`); on jax and torch
nothing here imports TensorFlow.
"""

import argparse
import contextlib
import json
import logging
import time
import zlib

import keras
import numpy as np
from keras import ops

from keras_nalu import ArithmeticUnit, formulas, snap_weights, validation
from keras_nalu import ops as nalu_ops
from keras_nalu.checkpoints import Checkpoint
from keras_nalu.gradients import compiled, value_and_grad
from keras_nalu.initializers import NMUUniform
from nalu_research.tasks.metrics import (
    mistry_threshold,
    paper_scale,
    sparsity_error,
    success_threshold,
)
from nalu_research.tasks.static_arithmetic import (
    TARGETS,
    StaticArithmetic,
    check_range,
    parse_target,
)

logger = logging.getLogger(__name__)

HIDDEN = 2

# Keras activations for the one-hidden-layer MLPs of Table 6, plus CReLU.
MLP_ACTIVATIONS = (
    "relu6",
    "softsign",
    "tanh",
    "sigmoid",
    "selu",
    "elu",
    "relu",
    "crelu",
    "linear",
)


def _package_units():
    """`{name: class}` of the package's arithmetic units (not the cells), by
    their class names in lower case: every `keras_nalu.ArithmeticUnit`
    registered under the package name, so a unit added to the package
    appears here with no change to this module."""
    found = {}
    for registered, cls in keras.saving.get_custom_objects().items():
        package, _, name = registered.partition(">")
        if (
            package == "keras_nalu"
            and isinstance(cls, type)
            and issubclass(cls, ArithmeticUnit)
            and cls is not ArithmeticUnit
            and not hasattr(cls, "state_size")  # a recurrent cell
        ):
            found[name.lower()] = cls
    return found


# The unit layers, by the names the unit models use ("nau", "nmu", "npu", ...);
# a unit of a user's own is named by its registered name ("package>Name").
LAYERS = _package_units()
# Each unit model is two layers, input -> HIDDEN -> 1, of these kinds, or one
# layer, input -> 1 (the single-unit tasks of Mistry et al.). Any other pair
# of units is the model "first-second" (e.g. "nau-npu", "nau-my_units>Cube"),
# any one unit "single-name".
UNIT_MODELS = {
    "nac": ("nac", "nac"),
    "nalu": ("nalu", "nalu"),
    "nau": ("nau", "nau"),
    "nmu": ("nau", "nmu"),
    "nmru": ("nau", "nmru"),
    "realnpu": ("nau", "realnpu"),
    "inalu": ("inalu", "inalu"),
    "single-nmu": ("nmu",),
    "single-nmru": ("nmru",),
    "single-realnpu": ("realnpu",),
}
MODELS = tuple(UNIT_MODELS) + MLP_ACTIVATIONS


def unit_class(kind):
    """The unit class of the name `kind`: one of `LAYERS`, or a unit
    registered with Keras as `"package>Name"`; None if there is none."""
    if kind in LAYERS:
        return LAYERS[kind]
    cls = keras.saving.get_registered_object(kind)
    if isinstance(cls, type) and issubclass(cls, ArithmeticUnit):
        return cls
    return None


def unit_kinds(model):
    """The unit names of `model`'s layers, input to output, or None for an
    MLP; raises a `ValueError` for a name that is neither."""
    if model in UNIT_MODELS:
        return UNIT_MODELS[model]
    if isinstance(model, str) and model not in MLP_ACTIVATIONS:
        kinds = (
            (model.removeprefix("single-"),)
            if model.startswith("single-")
            else tuple(model.split("-"))
        )
        if len(kinds) <= 2 and all(unit_class(kind) for kind in kinds):
            return kinds
    if model in MLP_ACTIVATIONS:
        return None
    raise _invalid_model(model)


def model_name(text):
    """`text` if it names a model of the engine (an argparse type)."""
    try:
        unit_kinds(text)
    except ValueError as error:
        raise argparse.ArgumentTypeError(str(error)) from None
    return text


def _invalid_model(model):
    return ValueError(
        f"Received an invalid value for `model`, expected one of {MODELS}, "
        "'first-second' of two unit names or 'single-name' of one (units: "
        f"{', '.join(LAYERS)}, or a registered 'package>Name'). "
        f"Received: model={model!r}"
    )


def configured_unit(kind, units, options=None):
    """A new unit of the name `kind` with `units` outputs, its defaults
    changed by `options[kind]`, a dict of constructor arguments (e.g.
    `{"nmru": {"sign_retrieval": True}}`): the layer checks them here."""
    return unit_class(kind)(units, **(options or {}).get(kind, {}))


def _check_options(options):
    ok = options is None or (
        isinstance(options, dict)
        and all(unit_class(kind) and isinstance(v, dict) for kind, v in options.items())
    )
    if not ok:
        raise ValueError(
            "Received an invalid value for `layer_options`, expected None or "
            f"{{kind: {{argument: value}}}} with kinds of {tuple(LAYERS)} or "
            f"registered 'package>Name'. Received: layer_options={options!r}"
        )
    return options


@contextlib.contextmanager
def _drawing_from(layer, generator):
    """While it lasts, every initializer that draws at random (one with a
    `seed`: Keras's random initializers and their subclasses) which `layer`
    passes to its `add_weight`, whatever argument or code made it, draws
    from `generator` instead: weight after weight, in the order the layer
    creates them. (Keras's default initializer of a float weight,
    `"glorot_uniform"`, included.)"""
    add_weight = layer.add_weight

    def seeded(*args, **kwargs):
        if len(args) > 1:  # Keras 2's add_weight(shape, initializer, dtype)
            dtype = args[2] if len(args) > 2 else kwargs.get("dtype")
            args = (args[0], _reseeded(args[1], dtype, generator), *args[2:])
        else:
            kwargs["initializer"] = _reseeded(
                kwargs.get("initializer"), kwargs.get("dtype"), generator
            )
        return add_weight(*args, **kwargs)

    layer.add_weight = seeded
    try:
        yield
    finally:
        del layer.add_weight


def _reseeded(initializer, dtype, generator):
    """`initializer` (as `add_weight` takes it: None is Keras's default)
    drawing from `generator` if it draws at random, else as it is."""
    if initializer is None and (dtype is None or "float" in str(dtype)):
        initializer = "glorot_uniform"  # add_weight's default
    if isinstance(initializer, (str, dict)):
        initializer = keras.initializers.get(initializer)
    if isinstance(initializer, keras.initializers.Initializer):
        config = initializer.get_config()
        if "seed" in config:
            return type(initializer).from_config({**config, "seed": generator})
    return initializer


def _layer_weights(weights, layer):
    """`{name: weight}` of layer `layer`, from the stacked `{f"{name}_{layer}":
    weight}` of `weights`."""
    suffix = f"_{layer}"
    return {
        name.removesuffix(suffix): value
        for name, value in weights.items()
        if name.endswith(suffix) and name.rsplit("_", 1)[1] == str(layer)
    }


class EngineModel:
    """A model of the engine, resolved once: its layers, configured, one per
    position, which every part of the engine reads.

    A unit model's layers are its units (`unit_kinds`), each made by
    `configured_unit` (its defaults changed by `layer_options`) and, with
    `nmu_center`, a kernel initializer `keras_nalu.initializers.NMUUniform`
    (the NMU's and NMRU's) replaced by `NMUUniform(center=nmu_center)`; an
    MLP's are two `keras.layers.Dense`, with its activation between them.
    They are built once, for the model's widths; the runs' weights live
    apart, stacked along a leading run axis (`initial_weights`), and the
    methods apply the layers' own `math`, `penalty`, `penalty_schedule`,
    `effective_weights` and `exact_values` to them.

    Args:
        model: One of `MODELS`, or a model of any units (`unit_kinds`):
            `"nau-npu"`, `"single-npu"`, `"nau-my_units>Cube"`.
        input_size: Input features.
        layer_options: `{kind: {argument: value}}`, constructor arguments
            that change the layers of these kinds from their defaults, e.g.
            `{"nmru": {"sign_retrieval": True}}`.
        nmu_center: Center of the NMU and NMRU kernels' initial range, or
            None for the layers' own initializer.

    Attributes:
        name: `model`.
        kinds: The units' names, input to output, or None for an MLP.
        layers: The configured layers, input to output.
        schedules: `{layer: (strength, start, end)}`, the penalty schedule of
            each layer that has one.
    """

    def __init__(self, model, input_size, layer_options=None, nmu_center=None):
        self.kinds = unit_kinds(model)  # raises for an unknown model
        self.name = model
        input_size = validation.positive_int("input_size", input_size)
        _check_options(layer_options)
        for kind in layer_options or {}:
            if kind not in (self.kinds or ()):
                configured_unit(kind, 1, layer_options)  # checks its arguments
        if self.kinds is None:
            layers = [keras.layers.Dense(HIDDEN), keras.layers.Dense(1)]
        else:
            sizes = (HIDDEN,) * (len(self.kinds) - 1) + (1,)
            layers = [
                configured_unit(kind, units, layer_options)
                for kind, units in zip(self.kinds, sizes, strict=True)
            ]
        if nmu_center is not None:
            center = NMUUniform(center=nmu_center)  # checks it
            layers = [
                _copy(layer, kernel_initializer=center)
                if isinstance(getattr(layer, "kernel_initializer", None), NMUUniform)
                else layer
                for layer in layers
            ]
        hidden = 2 * HIDDEN if model == "crelu" else HIDDEN
        self.widths = (input_size,) + (hidden,) * (len(layers) - 1)
        for layer, width in zip(layers, self.widths, strict=True):
            layer.build((None, width))
        self.layers = tuple(layers)
        self.schedules = {
            i: schedule
            for i, layer in enumerate(self.layers)
            if (schedule := getattr(layer, "penalty_schedule", None)) is not None
        }

    def build(self, seed=None):
        """New copies of the layers, built: with `seed`, every random
        initializer of theirs draws from one `keras.random.SeedGenerator(seed)`,
        weight after weight in the order the layers create them (whatever
        argument, if any, gave the initializer), so the weights depend on
        the seed alone."""
        generator = None if seed is None else keras.random.SeedGenerator(seed)
        built = []
        for layer, width in zip(self.layers, self.widths, strict=True):
            layer = _copy(layer)
            with (
                contextlib.nullcontext()
                if generator is None
                else _drawing_from(layer, generator)
            ):
                layer.build((None, width))
            built.append(layer)
        return built

    @staticmethod
    def weights(layers):
        """`{f"{name}_{i}": weight}`: the weights of layer `i` of `layers`
        that its math reads (a unit's `unit_weights()`: trainable or not,
        but its penalty's step counter)."""
        return {
            f"{weight.name}_{i}": weight
            for i, layer in enumerate(layers)
            for weight in (
                layer.unit_weights()
                if isinstance(layer, ArithmeticUnit)
                else {w.name: w for w in layer.weights}
            ).values()
        }

    def initial_weights(self, seeds):
        """The initial weights of the runs of `seeds`, stacked on axis 0:
        `({name: array}, {name: weight})`, the second the weights of the
        first seed's layers (their `trainable` and `constraint`). Seed `s`'s
        are those of `build(s)`, built once per distinct seed."""
        seeds = list(seeds)
        drawn = {seed: self.weights(self.build(seed)) for seed in dict.fromkeys(seeds)}
        like = drawn[seeds[0]]
        values = {
            name: np.stack([ops.convert_to_numpy(drawn[s][name]) for s in seeds])
            for name in like
        }
        return values, like

    def forward(self, weights, x, training=False):
        """Outputs `(runs, batch, 1)` for inputs `(runs, batch, in)` and the
        stacked `weights` (`{f"{name}_{layer}": (runs, ...)}`), in training
        mode or not (the layers' `training` argument): each unit's `math`."""
        if self.kinds is not None:
            h = x
            for i, unit in enumerate(self.layers):
                h = unit.math(h, _layer_weights(weights, i), training)
            return h
        h = ops.add(
            nalu_ops.matmul(x, weights["kernel_0"]), weights["bias_0"][:, None, :]
        )
        if self.name == "crelu":
            h = ops.concatenate([ops.relu(h), ops.relu(-h)], axis=-1)
        else:
            h = keras.activations.get(self.name)(h)
        return ops.add(
            nalu_ops.matmul(h, weights["kernel_1"]), weights["bias_1"][:, None, :]
        )

    def layer_penalty(self, weights, layer):
        """Layer `layer`'s penalty per run, `(runs,)` (its `penalty`), or
        None for a layer without one."""
        if self.kinds is None:
            return None
        return self.layers[layer].penalty(_layer_weights(weights, layer))

    def penalty(self, weights):
        """The sum over layers of each layer's penalty, per run: shape
        `(runs,)` (0 for models without one)."""
        total = 0.0
        for layer in range(len(self.layers)):
            one = self.layer_penalty(weights, layer)
            if one is not None:
                total += one
        return total

    def sparsity(self, weights):
        """Per run, the sparsity error (`tasks.sparsity_error`) of the first
        layer's effective kernel against that unit's own exact values
        (`effective_weights()["kernel"]`, `exact_values["kernel"]`), or None
        for an MLP or a unit without them."""
        first = self.layers[0]
        values = getattr(first, "exact_values", {}).get("kernel")
        if self.kinds is None or values is None:
            return None
        kernel = first.effective_weights(_layer_weights(weights, 0)).get("kernel")
        if kernel is None:
            return None
        return [sparsity_error(w, values) for w in ops.convert_to_numpy(kernel)]

    def keras_model(self, weights, index):
        """Run `index` of the stacked `weights` as a `keras.Sequential` of
        copies of the layers (a unit model's: an MLP's activation sits
        between its layers)."""
        if self.kinds is None:
            raise ValueError(
                "keras_model builds the unit models, not "
                f"the MLP {self.name!r} (its activation sits between its layers)."
            )
        layers = self.build()
        for name, weight in self.weights(layers).items():
            weight.assign(ops.convert_to_numpy(weights[name])[index])
        return keras.Sequential([keras.Input((self.widths[0],)), *layers])


def _copy(layer, **changes):
    """A new, unbuilt layer of `layer`'s class and config, with `changes`."""
    return type(layer).from_config({**layer.get_config(), **changes})


def forward(model, params, x, training=False):
    """Outputs `(runs, batch, 1)` of `model`, an `EngineModel` or a model's
    name (its layers at their defaults), for inputs `(runs, batch, in)` and
    stacked weights `params` (`EngineModel.forward`)."""
    if not isinstance(model, EngineModel):
        model = EngineModel(model, x.shape[-1])
    return model.forward(params, x, training)


# |initial split| below which lay the stuck and late runs of the anchor, in
# both codes (an analysis of Madsen & Johansen's per-seed results and ours).
SMALL_SPLIT = 0.071


def initial_splits(bench):
    """Per run of a `StaticBenchmark` whose first layer is a two-unit NAU
    (NAU-NMU, NAU-NMRU, ...), the split of that NAU between its two hidden
    units: with `d_i = W[i, 0] - W[i, 1]`, the sum of `d_i` over the inputs
    only in the run's `a` slice minus that over the inputs only in its `b`
    slice. Near 0 the NAU is undecided which unit sums which slice: on the
    anchor task such starts are the runs that stay stuck or solve late
    (`docs/experiments/units-benchmark.md`)."""
    kernel = ops.convert_to_numpy(_nau_kernel(bench))  # (runs, inputs, 2)
    return [
        float(d[a].sum() - d[b].sum())
        for d, (a, b) in zip(
            kernel[..., 0] - kernel[..., 1], _only_masks(bench), strict=True
        )
    ]


def set_initial_splits(bench, targets):
    """Moves run `i`'s initial split (`initial_splits`) to `targets[i]`
    (`None`: left as drawn) before training, by adding `c` to `W[i, 0]` and
    subtracting it from `W[i, 1]` on the inputs only in its `a` slice, the
    smallest even change that does it (`c` is about 0.02 for a move of
    0.6 over 13 inputs). Returns the splits after the move."""
    kernel = ops.convert_to_numpy(_nau_kernel(bench)).copy()
    splits = initial_splits(bench)
    for i, ((a, _), target) in enumerate(zip(_only_masks(bench), targets, strict=True)):
        if target is not None:
            c = (target - splits[i]) / (2 * a.sum())
            kernel[i, a, 0] += c
            kernel[i, a, 1] -= c
    _nau_kernel(bench).assign(kernel)
    return initial_splits(bench)


def _nau_kernel(bench):
    if (bench.engine_model.kinds or (None,))[0] != "nau" or HIDDEN != 2:
        raise ValueError(
            "Received an invalid value for `bench`, expected a benchmark whose "
            "first layer is a two-unit NAU (e.g. model 'nmu'). Received: a "
            f"benchmark of model {bench.model!r}"
        )
    return bench.params["kernel_0"]


def _only_masks(bench):
    """Per run, the boolean masks of the inputs only in `a`, only in `b`
    (from the benchmark's masks of its slices)."""
    masks = ops.convert_to_numpy(bench._masks) > 0  # (runs, inputs, 2)
    a, b = masks[..., 0], masks[..., 1]
    return list(zip(a & ~b, b & ~a, strict=True))


# The 32-bit finalizer "lowbias32" (C. Wellons, hash-prospector): a bijection
# of 32-bit integers whose output bits each flip with probability 0.5 +- 0.002
# when one input bit flips. Written in int32 with wrapping products, which
# every backend computes alike; `>>` on int32 is arithmetic, so each shift is
# masked to its logical result.
_MIX = ((16, 0x7FEB352D), (15, 0x846CA68B - 2**32), (16, None))


def _mix(x):
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


def _stream(seed, target, interpolation=None):
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


def l1_beta(step, start, end, every=10_000, growth=10.0):
    """The weight of the L1 penalty of Heim et al.'s NPU as Mistry et al.'s
    benchmark steps it (`--regualizer-beta-start/-end/-step/-growth`):
    `min(start * growth**floor((step - 1) / every), end)` at the update
    `step` (from 1; their iteration `step - 1`, from 0). `start` and `end`
    may be tensors `(runs,)`, one per run. (Theirs multiplies by `growth`
    until the value is at least `end`, which for an `end` that is not
    `start` times a power of `growth` ends above `end`; their script's are
    powers of 10.)

    >>> [f"{float(l1_beta(s, 1e-7, 1e-5)):.0e}" for s in (1, 10_000, 10_001, 20_001)]
    ['1e-07', '1e-07', '1e-06', '1e-05']
    """
    start = ops.convert_to_tensor(start, "float32")
    stage = ops.floor((ops.cast(step, "float32") - 1.0) / float(every))
    # Late stages overflow to inf, which `end` bounds; but 0 * inf is NaN.
    grown = ops.minimum(start * ops.power(float(growth), stage), end)
    return ops.where(start > 0, grown, ops.zeros_like(grown))


def _l1(value, operations):
    """`{operation: (start, end)}` of the `l1` argument: one `(start, end)`
    for every operation, or a dict of one per operation."""
    ok = True
    pairs = dict.fromkeys(operations, value) if not isinstance(value, dict) else value
    try:
        checked = {}
        for operation, pair in pairs.items():
            start, end = pair
            start = validation.non_negative_float("start", start)
            end = validation.non_negative_float("end", end)
            ok = ok and start <= end
            checked[operation] = (start, end)
    except (TypeError, ValueError):
        ok = False
    if not ok or set(checked) != set(operations):
        raise ValueError(
            "Received an invalid value for `l1`, expected None, (start, end) "
            "with 0 <= start <= end, or {operation: (start, end)} for each of "
            f"the operations {tuple(operations)}. Received: l1={value!r}"
        )
    return checked


def _ranges(value, task_kwargs):
    """`{key: (interpolation, extrapolation)}` of the `ranges` argument: a
    sequence of pairs (keyed by index) or a dict (JSON keys: int or str),
    each interpolation range one interval."""
    expected = (
        "None, a sequence of (interpolation, extrapolation) pairs or a dict "
        "{key: (interpolation, extrapolation)} (int or str keys), each "
        "interpolation range one interval (low, high), each extrapolation "
        "range an interval or a union of them"
    )
    given = {
        k for k in ("interpolation_range", "extrapolation_range") if k in task_kwargs
    }
    if given:
        raise ValueError(
            f"Received ranges and {', '.join(sorted(given))}, expected one of "
            "them: `ranges` holds the interpolation and extrapolation range of "
            f"each run. Received: ranges={value!r}"
        )
    items = value.items() if isinstance(value, dict) else None
    if items is None and isinstance(value, (list, tuple)):
        items = enumerate(value)
    try:
        found = {}
        for key, (interpolation, extrapolation) in items or ():
            if not isinstance(key, (int, str)) or isinstance(key, bool):
                raise ValueError(key)
            found[key] = (
                check_range("interpolation_range", interpolation),
                check_range("extrapolation_range", extrapolation, union=True),
            )
    except (TypeError, ValueError):
        found = {}
    if not found:
        raise validation.invalid("ranges", expected, value)
    return found


def _schedule(value):
    ok = isinstance(value, (tuple, list)) and len(value) == 3
    if ok:
        try:
            strength = validation.non_negative_float("strength", value[0])
            start = validation.non_negative_int("start", value[1])
            end = validation.non_negative_int("end", value[2])
            ok = end >= start
        except ValueError:
            ok = False
    if not ok:
        raise ValueError(
            "Received an invalid value for `regularization`, expected None or "
            "(strength >= 0, start >= 0, end >= start) with integer steps. "
            f"Received: regularization={value!r}"
        )
    return strength, start, end


def _learning_rate(value):
    if isinstance(value, keras.optimizers.schedules.LearningRateSchedule):
        return value
    try:
        return validation.positive_float("learning_rate", value)
    except ValueError:
        raise ValueError(
            "Received an invalid value for `learning_rate`, expected a positive "
            "float or a keras.optimizers.schedules.LearningRateSchedule. "
            f"Received: learning_rate={value!r}"
        ) from None


def _serialized_rate(value):
    """`value` as the JSON of a benchmark's configuration (a schedule as its
    Keras config, so a checkpoint resumes only under the same schedule)."""
    if isinstance(value, keras.optimizers.schedules.LearningRateSchedule):
        return keras.optimizers.schedules.serialize(value)
    return value


class StaticBenchmark:
    """Trains `model` on every `(operation, seed)` pair at once.

    Each pair is a run of its own: seed `s` fixes the task's slices, the
    initial weights and the batch stream, and a run's results do not depend
    on which other runs share the program (tested; up to float rounding, as
    batched kernels of other shapes round differently). The model is
    resolved once, into `engine_model` (an `EngineModel`: its configured
    layers), which every step, evaluation and export reads.

    Args:
        model: One of `MODELS`, or a model of any units (`unit_kinds`):
            `"nau-npu"`, `"single-npu"`, `"nau-my_units>Cube"`.
        operations: The targets of the task, each a name of
            `nalu_research.tasks.static_arithmetic.TARGETS` ("add", "sub",
            "mul", "div", "square", "sqrt") or an expression of the inputs
            `a` and `b` ("2*a - b"; `parse_target`), or one as a string.
        seeds: Sequence of integer seeds, each run for every operation.
        batch_size: Fresh examples per step and run.
        learning_rate: Adam's learning rate (`keras.optimizers.Adam`, its
            other arguments at their defaults but `epsilon`): a positive
            float or a `keras.optimizers.schedules.LearningRateSchedule` of
            the step (e.g. `PiecewiseConstantDecay` to lower it late in
            training).
        eval_size: Examples per run in each of the fixed interpolation and
            extrapolation test sets.
        regularization: `(strength, start, end)` of the units' penalty
            schedule, for every layer with one; `"default"` for each layer's
            own default (`EngineModel.schedules`), or None for no penalty.
            Ignored by models without one.
        nmu_center: Center of the NMU and NMRU kernels' initial range
            (`keras_nalu.initializers.NMUUniform`), or None for the layers'
            default initializer.
        layer_options: `{kind: {argument: value}}`, constructor arguments
            that change the layers of these kinds from their defaults (see
            `EngineModel`), e.g. `{"nmru": {"sign_retrieval": True}}`.
        clipnorm: Largest L2 norm of each run's gradient (over all its
            weights, as PyTorch's `clip_grad_norm_` of one model), or None.
        threshold: The extrapolation MSE below which a run counts as solved,
            or None for Madsen & Johansen's simulated threshold of each
            target (`nalu_research.tasks.success_threshold`), `"mistry"`
            for Mistry et al.'s (`nalu_research.tasks.mistry_threshold`,
            epsilon 1e-5), or a function of a run's task (a
            `StaticArithmetic`) to its threshold.
        adam_epsilon: Adam's `epsilon`, or None for Keras's default (1e-7;
            PyTorch's Adam, which Madsen & Johansen's code uses, has 1e-8).
        ranges: None (every run on the task's ranges), or the ranges the
            runs train on, each as its own runs: a sequence of
            `(interpolation, extrapolation)` pairs, keyed by their index, or
            a dict `{key: (interpolation, extrapolation)}`. The runs are then
            `(operation, key, seed)` for every operation, range and seed,
            each drawing its batches from its own interpolation range and
            stream, with its own threshold; rows carry `range` (the key).
        clipvalue: Bound of each gradient element's magnitude, applied
            after `clipnorm` (PyTorch's `clip_grad_value_`, as Mistry et
            al.'s code applies it after `clip_grad_norm_`), or None.
        l1: None, or the L1 penalty of Heim et al.'s NPU as Mistry et al.'s
            benchmark schedules it: `l1_beta(step, start, end, l1_every,
            l1_growth)` times the sum of `|w|` over every trainable weight
            of the run, added to each run's loss; `(start, end)` for every
            operation or `{operation: (start, end)}`.
        l1_every: Steps between two growths of the L1 weight.
        l1_growth: The factor of each growth.
        penalty_gate: Whether each run's layer penalties are multiplied by
            its entry of `penalty_gate`, a non-trainable `(runs,)` variable
            starting at 1 that an `after_eval` hook of `run` may set (e.g.
            Mistry et al.'s iNALU, penalized only while its interpolation
            MSE is below 1: `InaluProtocol`). It is saved with the
            checkpoint. False: no gate, the program as without it.
        task_kwargs: Passed to `StaticArithmetic` (ranges, sizes). The
            interpolation range must be one interval (batches are drawn in
            the graph); the extrapolation range may be a union.
    """

    def __init__(
        self,
        model,
        operations,
        seeds,
        batch_size=128,
        learning_rate=1e-3,
        eval_size=10_000,
        regularization="default",
        nmu_center=None,
        layer_options=None,
        clipnorm=None,
        threshold=None,
        adam_epsilon=None,
        ranges=None,
        clipvalue=None,
        l1=None,
        l1_every=10_000,
        l1_growth=10.0,
        penalty_gate=False,
        **task_kwargs,
    ):
        unit_kinds(model)  # raises for an unknown model
        self.model = model
        operations = [operations] if isinstance(operations, str) else operations
        targets = [parse_target(op, "operation") for op in operations]
        self._config = {
            "model": model,
            # Names, as before targets were expressions: checkpoints resume.
            "operations": [t.name for t in targets],
            "seeds": list(seeds),
            "batch_size": batch_size,
            "learning_rate": _serialized_rate(learning_rate),
            "eval_size": eval_size,
            "regularization": regularization,
            "nmu_center": nmu_center,
            **task_kwargs,
        }
        # Only when set: a checkpoint written before these existed resumes.
        if clipnorm is not None:
            self._config["clipnorm"] = clipnorm
        self.layer_options = _check_options(layer_options)
        if layer_options:
            self._config["layer_options"] = layer_options
        if threshold is not None and not callable(threshold):
            self._config["threshold"] = threshold
        self.adam_epsilon = None
        if adam_epsilon is not None:
            self.adam_epsilon = validation.positive_float("adam_epsilon", adam_epsilon)
            self._config["adam_epsilon"] = self.adam_epsilon
        self.clipnorm = (
            None
            if clipnorm is None
            else validation.positive_float("clipnorm", clipnorm)
        )
        self.clipvalue = (
            None
            if clipvalue is None
            else validation.positive_float("clipvalue", clipvalue)
        )
        if clipvalue is not None:
            self._config["clipvalue"] = self.clipvalue
        operations = [t.name for t in targets]
        self.ranges = None if ranges is None else _ranges(ranges, task_kwargs)
        if ranges is not None:
            self._config["ranges"] = [[k, *v] for k, v in self.ranges.items()]
        self.l1 = None if l1 is None else _l1(l1, operations)
        if l1 is not None:
            self.l1_every = validation.positive_int("l1_every", l1_every)
            self.l1_growth = validation.positive_float("l1_growth", l1_growth)
            self._config["l1"] = {
                "beta": self.l1,
                "every": self.l1_every,
                "growth": self.l1_growth,
            }
        seeds = [validation.non_negative_int("seeds", s) for s in seeds]
        if not operations or not seeds:
            raise ValueError(
                "Received no runs, expected at least one operation and one seed. "
                f"Received: operations={operations}, seeds={seeds}"
            )
        self.batch_size = validation.positive_int("batch_size", batch_size)
        self.learning_rate = _learning_rate(learning_rate)
        eval_size = validation.positive_int("eval_size", eval_size)
        # The tasks fix the input size, then the model is resolved, once.
        if self.ranges is None:
            self.runs = [(op, seed) for op in operations for seed in seeds]
            self.tasks = [
                StaticArithmetic(op, seed=seed, **task_kwargs) for op, seed in self.runs
            ]
        else:
            self.runs = [
                (op, key, seed) for op in operations for key in self.ranges
                for seed in seeds
            ]  # fmt: skip
            self.tasks = [
                StaticArithmetic(
                    op,
                    seed=seed,
                    interpolation_range=self.ranges[key][0],
                    extrapolation_range=self.ranges[key][1],
                    **task_kwargs,
                )
                for op, key, seed in self.runs
            ]
        self._operations = [run[0] for run in self.runs]
        self._seeds = [run[-1] for run in self.runs]
        self.input_size = self.tasks[0].input_size
        self.engine_model = EngineModel(
            model, self.input_size, self.layer_options, nmu_center
        )
        self.schedules = dict(self.engine_model.schedules)
        if regularization is None:
            self.schedules = {}
        elif regularization != "default":
            schedule = _schedule(regularization)
            self.schedules = dict.fromkeys(self.schedules, schedule)
        if np.ndim(self.tasks[0].interpolation_range) != 1:
            raise ValueError(
                "Received an invalid value for `interpolation_range`, expected "
                "one interval (low, high): batches are drawn in the graph. "
                f"Received: interpolation_range={task_kwargs['interpolation_range']}"
            )
        self.thresholds = self._thresholds(threshold)
        if callable(threshold):  # its values, as JSON
            self._config["threshold"] = self.thresholds.tolist()
        masks = np.zeros((len(self.runs), self.input_size, 2), "float32")
        for i, task in enumerate(self.tasks):
            masks[i, task.a_slice, 0] = 1.0
            masks[i, task.b_slice, 1] = 1.0
        self._masks = ops.convert_to_tensor(masks)
        # Each run's target, picked in the graph among the paper's six and
        # the benchmark's others. (All six, as when they were the only
        # targets: XLA then compiles the program it compiled before, and a
        # run repeats its earlier results to the bit; on jax, computing only
        # the runs' own targets fused the step otherwise.)
        names = list(dict.fromkeys([*TARGETS, *operations]))
        self._targets_used = [parse_target(name) for name in names]
        index = [names.index(op) for op in self._operations]
        self._op_one_hot = ops.one_hot(np.array(index), len(names))[:, None, :]
        # A run's batch stream is keyed by its own (seed, target) alone, and
        # its interpolation range among `ranges`.
        self._streams = ops.convert_to_tensor(
            np.array(
                [
                    _stream(
                        seed,
                        op,
                        None if self.ranges is None else task.interpolation_range,
                    )
                    for op, seed, task in zip(
                        self._operations, self._seeds, self.tasks, strict=True
                    )
                ],
                "int32",
            )
        )
        if self.ranges is None:  # one interval, numbers in the program
            self._low, self._high = self.tasks[0].interpolation_range
        else:
            lows, highs = np.array([t.interpolation_range for t in self.tasks]).T
            self._low = ops.convert_to_tensor(lows[:, None].astype("float32"))
            self._high = ops.convert_to_tensor(highs[:, None].astype("float32"))
        if self.l1 is not None:
            starts, ends = np.array([self.l1[op] for op in self._operations]).T
            self._l1_start = ops.convert_to_tensor(starts.astype("float32"))
            self._l1_end = ops.convert_to_tensor(ends.astype("float32"))
        self.test_sets = {
            split: self._test_set(split, eval_size)
            for split in ("interpolation", "extrapolation")
        }
        # Each trainable weight stacks the runs' Keras-initialized weights and
        # keeps the layer's constraint (NAU, NMU, NMRU: clipping to [low,
        # high]), which the optimizer applies after every update, as it does
        # for the layer. A weight the layers do not train stays as drawn, a
        # constant of the program (`constants`), passed to `math` as well.
        initial, like = self.engine_model.initial_weights(self._seeds)
        self.params, self.constants = {}, {}
        for name, weight in like.items():
            if weight.trainable:
                self.params[name] = keras.Variable(initial[name], name=name)
                self.params[name].constraint = weight.constraint
            else:
                self.constants[name] = ops.convert_to_tensor(initial[name])
        # Keras's Adam updates elementwise, so each run's slice of a stacked
        # weight moves exactly as it would alone. No `clipnorm` or
        # `global_clipnorm`: their norms would span the runs of a weight (clip
        # each run's gradient before `apply` if that is ever needed).
        epsilon = {} if self.adam_epsilon is None else {"epsilon": self.adam_epsilon}
        self.optimizer = keras.optimizers.Adam(self.learning_rate, **epsilon)
        self.optimizer.build(list(self.params.values()))
        # The step counter is the optimizer's `iterations`: after t steps,
        # the next one draws batch t + 1.
        self._step_index = next(
            i
            for i, v in enumerate(self.optimizer.variables)
            if v is self.optimizer.iterations
        )
        self._variables = [*self.params.values(), *self.optimizer.variables]
        self.penalty_gate = None
        if penalty_gate:
            self._config["penalty_gate"] = True
            # After the optimizer's variables: the state the steps thread.
            self.penalty_gate = keras.Variable(
                np.ones(len(self.runs), "float32"), trainable=False,
                name="penalty_gate",
            )  # fmt: skip
            self._variables.append(self.penalty_gate)
        # JAX and torch train on values (Keras's stateless optimizer step;
        # on torch 2.6 times faster here than updating in place); Keras's
        # TensorFlow optimizer has no stateless step: it updates in place.
        self._stateless = keras.backend.backend() != "tensorflow"
        self._train = compiled(
            self._train_stateless if self._stateless else self._train_in_place
        )
        self._evaluate = compiled(self._mse)
        self.random_mse = self._evaluated()

    @property
    def step(self):
        """The steps trained so far (the optimizer's `iterations`)."""
        return int(ops.convert_to_numpy(self.optimizer.iterations))

    def effective_weights(self, layer=0):
        """`{name: array (runs, ...)}`: layer `layer`'s effective weights
        (its `effective_weights`) of the runs' current weights, as NumPy
        arrays; `{}` for an MLP."""
        if self.engine_model.kinds is None:
            return {}
        unit = self.engine_model.layers[layer]
        found = unit.effective_weights(_layer_weights(self._weights(), layer))
        return {name: ops.convert_to_numpy(value) for name, value in found.items()}

    def reinitialize(self, runs, draw):
        """Re-draws the trainable weights of the runs of indices `runs`, as
        Mistry et al.'s iNALU reinitialisation does (`reset_parameters`):
        run `i` takes those of `engine_model.build` for a seed hashed from
        its own seed and `draw` (e.g. the iteration), so a resumed run draws
        the same. Adam's moments and step and the other runs are untouched,
        as in theirs."""
        indices = [int(i) for i in np.ravel(np.asarray(runs, dtype=np.int64))]
        if any(not 0 <= i < len(self.runs) for i in indices):
            raise ValueError(
                "Received an invalid value for `runs`, expected indices of runs "
                f"in [0, {len(self.runs)}). Received: runs={runs!r}"
            )
        draw = validation.non_negative_int("draw", draw)
        if not indices:
            return
        seeds = [
            zlib.crc32(f"reinitialize\0{self._seeds[i]}\0{draw}".encode()) % 2**31
            for i in indices
        ]
        drawn, _ = self.engine_model.initial_weights(seeds)
        for name, variable in self.params.items():
            values = ops.convert_to_numpy(variable).copy()
            values[indices] = drawn[name]
            variable.assign(values)

    def _thresholds(self, threshold):
        """Per run, its threshold (the `threshold` argument)."""
        if threshold is None or threshold == "mistry":
            simulate = success_threshold if threshold is None else mistry_threshold
            # It depends on the operation and the extrapolation range, not on
            # where the slices lie: once per operation and range.
            found = {}
            for op, task in zip(self._operations, self.tasks, strict=True):
                key = (op, repr(task.extrapolation_range))
                if key not in found:
                    found[key] = simulate(task)
            values = [
                found[op, repr(task.extrapolation_range)]
                for op, task in zip(self._operations, self.tasks, strict=True)
            ]
        elif callable(threshold):
            values = [
                validation.positive_float("threshold", threshold(task))
                for task in self.tasks
            ]
        else:
            if isinstance(threshold, str):
                raise validation.invalid(
                    "threshold",
                    "None, 'mistry', a positive number or a function of a task",
                    threshold,
                )
            value = validation.positive_float("threshold", threshold)
            values = [value] * len(self.runs)
        return np.array(values)

    def _targets(self, x):
        ab = nalu_ops.matmul(x, self._masks)  # (runs, batch, 2): a and b
        a, b = ab[..., :1], ab[..., 1:]
        every = ops.concatenate(
            [target.keras(a, b) for target in self._targets_used], axis=-1
        )
        # Select by `where`, not by multiplying: the other targets may be
        # NaN on signed inputs (sqrt) and NaN * 0 is NaN.
        chosen = ops.where(self._op_one_hot > 0, every, ops.zeros_like(every))
        return ops.sum(chosen, axis=-1, keepdims=True)

    def _test_set(self, split, size):
        x = np.stack(
            [
                task.sample(size, split, seed=(seed, 2**31 - 1))[0]
                for task, seed in zip(self.tasks, self._seeds, strict=True)
            ]
        )
        # Targets in float64 by the task itself, then float32.
        y = np.stack(
            [task.targets(one) for task, one in zip(self.tasks, x, strict=True)]
        )
        return ops.convert_to_tensor(x), ops.convert_to_tensor(y.astype("float32"))

    def _batch(self, step):
        """The fresh batch `(x, y)` of every run at step `step` (from 1)."""
        shape = (self.batch_size, self.input_size)
        x = counter_uniform(self._streams, step, shape, self._low, self._high)
        return x, self._targets(x)

    def _losses(self, params, step, gate=None):
        """Each run's loss `(runs,)` on batch `step`: its MSE plus its layers'
        scheduled penalties, each weighted `strength * ramp(step, start, end)`
        (and by the run's `gate`, the `penalty_gate`'s value, if given)."""
        x, y = self._batch(step)
        weights = {**self.constants, **params}
        error = self.engine_model.forward(weights, x, training=True) - y
        loss = ops.mean(ops.square(error), axis=(1, 2))
        for layer, (strength, start, end) in self.schedules.items():
            if strength > 0:  # as the layers: no penalty term at strength 0
                weight = strength * nalu_ops.ramp(step, start, end)
                if gate is not None:
                    weight = weight * gate
                loss += weight * self.engine_model.layer_penalty(weights, layer)
        if self.l1 is not None:
            beta = l1_beta(step, self._l1_start, self._l1_end, self.l1_every,
                           self.l1_growth)  # fmt: skip
            loss += beta * sum(
                ops.sum(ops.reshape(ops.abs(w), (w.shape[0], -1)), axis=1)
                for w in params.values()
            )
        return loss

    def _total_loss(self, params, step, gate=None):
        """The sum over runs of each run's loss (so each run's gradient is
        its own), of the weights `params`, a list in `self.params`' order."""
        params = dict(zip(self.params, params, strict=True))
        return ops.sum(self._losses(params, step, gate))

    def _clipped(self, grads):
        """`grads` (stacked over runs on axis 0) with each run's global norm
        scaled down to at most `clipnorm`, as `clip_grad_norm_` would scale
        that run's alone, then each element bounded by `clipvalue` (as
        `clip_grad_value_`, elementwise: per run by construction)."""
        if self.clipnorm is not None:
            grads = self._norm_clipped(grads)
        if self.clipvalue is not None:
            grads = [ops.clip(g, -self.clipvalue, self.clipvalue) for g in grads]
        return grads

    def _norm_clipped(self, grads):
        squares = sum(ops.sum(ops.reshape(ops.square(g), (g.shape[0], -1)), axis=1)
                      for g in grads)  # fmt: skip
        scale = ops.minimum(1.0, self.clipnorm / (ops.sqrt(squares) + 1e-6))
        return [
            g * ops.reshape(scale, (-1,) + (1,) * (len(g.shape) - 1)) for g in grads
        ]

    def _train_stateless(self, values, steps):
        """`steps` steps from `values` (the params', then the optimizer's
        variables', then the `penalty_gate`'s if there is one), returning the
        new values: pure, as `jax.jit` needs."""
        count = len(self.params)
        end = count + len(self.optimizer.variables)
        loss_and_grad = value_and_grad(self._total_loss)

        def one_step(_, values):
            params, optimizer_values = values[:count], values[count:end]
            gates = values[end:]  # the gate, which the steps do not change
            step = optimizer_values[self._step_index] + 1
            grads = self._clipped(loss_and_grad(params, step, *gates)[1])
            params, optimizer_values = self.optimizer.stateless_apply(
                optimizer_values, grads, params
            )
            return [*params, *optimizer_values, *gates]

        return ops.fori_loop(0, steps, one_step, values)

    def _train_in_place(self, steps):
        """`steps` steps updating the variables (TensorFlow)."""
        variables = list(self.params.values())
        loss_and_grad = value_and_grad(self._total_loss)

        gates = () if self.penalty_gate is None else (self.penalty_gate.value,)

        def one_step(i, unused):
            step = self.optimizer.iterations + 1
            values = [v.value for v in variables]
            grads = self._clipped(loss_and_grad(values, step, *gates)[1])
            self.optimizer.apply(grads, variables)
            return unused

        ops.fori_loop(0, steps, one_step, 0)

    def _train_chunk(self, steps):
        """Trains `steps` steps and waits for them (the backend may run ahead)."""
        if self._stateless:
            values = self._train([v.value for v in self._variables], steps)
            for variable, value in zip(self._variables, values, strict=True):
                variable.assign(value)
        else:
            self._train(steps)
        return self.step

    def _mse(self, params):
        weights = {**self.constants, **params}
        return {
            split: ops.mean(
                ops.square(self.engine_model.forward(weights, x) - y), axis=(1, 2)
            )
            for split, (x, y) in self.test_sets.items()
        }

    def _weights(self):
        """`{name: value}` of every weight the layers' math reads: the
        current trained ones and the constants."""
        return {**self.constants, **{k: v.value for k, v in self.params.items()}}

    def _evaluated(self):
        """`{split: per-run MSE}` of the current weights, as NumPy arrays."""
        mse = self._evaluate({k: v.value for k, v in self.params.items()})
        return {k: ops.convert_to_numpy(v) for k, v in mse.items()}

    def _restore(self, checkpoint, config):
        """Restores `checkpoint` if it was written for `config`; returns its
        JSON state, or None (no checkpoint, or one of another configuration
        that was not kept: training starts afresh). The resume policy is
        `keras_nalu.checkpoints.Checkpoint.load_for`'s, that of `fit`."""
        saved = checkpoint.load_for(config)
        if saved is None:
            return None
        values, _, state = saved
        layout = [(tuple(v.shape), str(v.dtype)) for v in self._variables]
        found = [(v.shape, str(v.dtype)) for v in values]
        if found != layout:
            raise ValueError(
                f"The checkpoint {checkpoint.path} does not hold this benchmark's "
                "weights and optimizer state; it was written by another model. "
                f"Delete it or use another checkpoint directory. (It holds "
                f"{found}; this benchmark has {layout}.)"
            )
        for variable, value in zip(self._variables, values, strict=True):
            variable.assign(value)
        return state

    def run(
        self,
        iterations,
        eval_every=1000,
        on_eval=None,
        checkpoint=None,
        progress=None,
        after_eval=None,
    ):
        """Trains `iterations` steps, evaluating at 0 and every `eval_every` steps.

        `on_eval(entry)` is called with each evaluation this call makes (an
        entry of the history; not those a resume restores), and `progress`, a
        `keras_nalu.training.Progress` of `iterations` steps, is updated with
        `progress_values(entry)`.

        `after_eval(bench, history)`, if given, is called after each
        evaluation this call makes (before `on_eval` and the checkpoint),
        with the history so far (after a resume, the restored history then
        this evaluation's entry): it may set the runs' `penalty_gate`,
        `reinitialize` runs, and add JSON-able keys to the last entry. A
        checkpoint does not record which hook trained it: resume with the
        same one.

        With `checkpoint` (a directory), the state of every run (weights,
        Adam's variables, the step) and the history so far are saved there
        after every evaluation by a `keras_nalu.checkpoints.Checkpoint` (one
        file, replaced atomically), and a later call with the same benchmark
        and arguments resumes from it: every batch is drawn from its step, so
        the result is that of an uninterrupted run. A checkpoint of another
        configuration is ignored (a warning is logged) and replaced, unless
        it was kept (`keras_nalu.checkpoints.Checkpoint.keep`): then it is
        refused (`Checkpoint.load_for`, the policy of `fit`).

        Returns a dict: `history` (iteration, per-run MSEs and first-layer
        sparsity error at every evaluation), `seconds` (training time, after
        compilation, including before a resume), `ms_per_run_iteration` and
        `resumed_at` (the iteration of the checkpoint resumed from, or None).

        Raises:
            ValueError: the checkpoint has this configuration but not this
                benchmark's variables, or it is a kept checkpoint of another
                configuration.
            keras_nalu.checkpoints.CheckpointInUseError: another run holds
                the checkpoint folder (it is this run's until `run` returns).
        """
        if checkpoint is not None:
            checkpoint = Checkpoint(checkpoint, argument="checkpoint")
        try:
            return self._run(
                iterations, eval_every, on_eval, checkpoint, progress, after_eval
            )
        finally:
            if checkpoint is not None:
                checkpoint.close()

    def _run(
        self, iterations, eval_every, on_eval, checkpoint, progress, after_eval=None
    ):
        """`run`, with its `keras_nalu.checkpoints.Checkpoint` or None."""
        iterations = validation.positive_int("iterations", iterations)
        eval_every = validation.positive_int("eval_every", eval_every)
        if checkpoint is not None:
            checkpoint.lock()  # before any work: a second run fails at once
        # Compile outside the timing: a chunk of no steps.
        self._train_chunk(0)
        history, seconds, done = [], 0.0, 0
        config = json.dumps(
            {**self._config, "iterations": iterations, "eval_every": eval_every},
            sort_keys=True,
        )
        saved = None
        if checkpoint is not None:
            checkpoint.check_writable()
            saved = self._restore(checkpoint, config)
        if saved is not None:
            seconds, done = saved["seconds"], saved["done"]
            history = [
                {k: np.asarray(v) if k in self.test_sets else v for k, v in e.items()}
                for e in saved["history"]
            ]
        while True:
            if saved is None or done > history[-1]["iteration"]:
                history.append(
                    {
                        "iteration": done,
                        **self._evaluated(),
                        "sparsity": self.engine_model.sparsity(self._weights()),
                    }
                )
                if after_eval is not None:
                    after_eval(self, history)
                if on_eval is not None:
                    on_eval(history[-1])
                if progress is not None:
                    progress.update(done, self.progress_values(history[-1]))
                if checkpoint is not None:
                    as_json = [
                        {k: np.asarray(v).tolist() if k in self.test_sets else v
                         for k, v in entry.items()}
                        for entry in history
                    ]  # fmt: skip
                    state = {"history": as_json, "seconds": seconds, "done": done,
                             "config": config}  # fmt: skip
                    values = [ops.convert_to_numpy(v) for v in self._variables]
                    try:
                        checkpoint.save(values, state)
                    except OSError as error:  # e.g. a full disk: train on
                        logger.warning(
                            "Could not save the checkpoint of iteration %d in %s "
                            "(%s); the previous one stays, and training goes on.",
                            done, checkpoint.directory, error,
                        )  # fmt: skip
            if done >= iterations:
                break
            chunk = min(eval_every - done % eval_every, iterations - done)
            start = time.perf_counter()
            self._train_chunk(chunk)
            seconds += time.perf_counter() - start
            done += chunk
        return {
            "history": history,
            "seconds": seconds,
            "ms_per_run_iteration": 1000 * seconds / iterations / len(self.runs),
            "resumed_at": None if saved is None else saved["done"],
        }

    def keras_model(self, index):
        """Run `index`'s model with its current weights, as a
        `keras.Sequential` of copies of the configured layers
        (`EngineModel.keras_model`)."""
        return self.engine_model.keras_model(self._weights(), index)

    def exact_formulas(self, size=1000):
        """Per run, the formula of its model snapped to exact weights
        (`keras_nalu.snap_weights`, verified within its default `rtol` on
        `size` fresh held-out and extrapolation examples of the run's task,
        drawn apart from the test sets), or None where snapping is refused
        (the run did not learn exact arithmetic) or for MLPs."""
        if self.engine_model.kinds is None:
            return [None] * len(self.runs)
        found = []
        for index, (task, seed) in enumerate(zip(self.tasks, self._seeds, strict=True)):
            positive = min(np.ravel(task.interpolation_range)) >= 0
            data = {}
            for split in ("interpolation", "extrapolation"):
                x, _ = task.sample(size, split, seed=(seed, 2**31 - 2))
                data[split] = (x, task.targets(x))
            try:
                snapped, _ = snap_weights(self.keras_model(index), data)
            except ValueError:
                found.append(None)
                continue
            found.append(formulas(snapped, positive=positive)[0])
        return found

    def solved(self, entry):
        """Per run, whether the extrapolation MSE of the evaluation `entry`
        (of `run()["history"]`) is below the run's threshold."""
        return np.asarray(entry["extrapolation"]) < self.thresholds

    def progress_values(self, entry):
        """What a progress line shows of the evaluation `entry`: the runs
        below their threshold now, the median and best extrapolation MSE."""
        extrapolation = np.asarray(entry["extrapolation"], dtype=np.float64)
        return {
            "solved": f"{int(np.sum(self.solved(entry)))}/{len(self.runs)} runs",
            "median extrapolation MSE": float(np.median(extrapolation)),
            "best": _best(extrapolation),
        }

    def scalars(self, entry):
        """`{tag: number}` of the evaluation `entry` for TensorBoard, per
        operation: the runs below their threshold, the median interpolation
        and extrapolation MSE and the best extrapolation MSE."""
        groups = np.array(
            [
                operation if self.ranges is None else f"{operation}/range{run[1]}"
                for operation, run in zip(self._operations, self.runs, strict=True)
            ]
        )
        solved = self.solved(entry)
        values = {}
        for operation in dict.fromkeys(groups):
            mine = groups == operation
            for split in self.test_sets:
                errors = np.asarray(entry[split], dtype=np.float64)[mine]
                values[f"{operation}/{split}_mse_median"] = float(np.median(errors))
            extrapolation = np.asarray(entry["extrapolation"], dtype=np.float64)
            # NaN when every run diverged: TensorBoardScalars skips it.
            values[f"{operation}/extrapolation_mse_best"] = _best(extrapolation[mine])
            values[f"{operation}/solved"] = int(np.sum(solved[mine]))
        return values

    def summarize(self, history, thresholds=None):
        """Per-run results by the strict criterion, from `run()["history"]`.

        A run is a success when its extrapolation MSE, at the evaluation with
        the lowest interpolation MSE, is below its threshold (the
        benchmark's, or `thresholds[i]` for run `i`: e.g. those of another
        epsilon); `solved_at` is the first evaluated iteration below it.
        """
        if thresholds is None:
            thresholds = self.thresholds
        thresholds = np.asarray(thresholds, dtype=np.float64)
        if thresholds.shape != (len(self.runs),):
            raise ValueError(
                "Received an invalid value for `thresholds`, expected None or "
                f"one number per run ({len(self.runs)}). Received: "
                f"thresholds={thresholds.tolist()!r}"
            )
        interp = np.array([h["interpolation"] for h in history])  # (evals, runs)
        extrap = np.array([h["extrapolation"] for h in history])
        iterations = np.array([h["iteration"] for h in history])
        best = np.argmin(np.where(np.isnan(interp), np.inf, interp), axis=0)
        results = []
        for i, run in enumerate(self.runs):
            operation, seed = run[0], run[-1]
            at = best[i]
            solved = np.nonzero(extrap[:, i] < thresholds[i])[0]
            sparsity = history[at]["sparsity"]
            results.append(
                {
                    "model": self.model,
                    "operation": operation,
                    "seed": seed,
                    "iteration": int(iterations[at]),
                    "interpolation_mse": float(interp[at, i]),
                    "extrapolation_mse": float(extrap[at, i]),
                    "interpolation_paper": float(
                        paper_scale(interp[at, i], self.random_mse["interpolation"][i])
                    ),
                    "extrapolation_paper": float(
                        paper_scale(extrap[at, i], self.random_mse["extrapolation"][i])
                    ),
                    "threshold": float(thresholds[i]),
                    "success": bool(extrap[at, i] < thresholds[i]),
                    "solved_at": int(iterations[solved[0]]) if solved.size else None,
                    "sparsity_error": None if sparsity is None else sparsity[i],
                    **({} if self.ranges is None else {"range": run[1]}),
                }
            )
        return results


def _best(errors):
    """The smallest finite value of `errors`, or NaN when none is finite."""
    finite = errors[np.isfinite(errors)]
    return float(finite.min()) if finite.size else float("nan")


def _half_statistics(values, counts, lengths):
    """For the list `np.repeat(values, counts)` cut to its first `L` items,
    for each `L` of `lengths`: the mean of its first `L // 2` items, and the
    mean and the (population) standard deviation of the rest. Arrays of
    `lengths`' shape, computed from the runs of equal values without
    expanding them."""
    bounds = np.concatenate([[0], np.cumsum(counts)])  # (segments + 1,)
    lengths = np.asarray(lengths)[:, None]
    half = lengths // 2

    def counted(low, high):  # each segment's items in [low, high): (checks, segs)
        return np.clip(
            np.minimum(bounds[1:], high) - np.maximum(bounds[:-1], low), 0, None
        )

    first = counted(0, half)
    second = counted(half, lengths)
    mean_first = (first * values).sum(1) / half[:, 0]
    mean_second = (second * values).sum(1) / (lengths - half)[:, 0]
    spread = (second * np.square(values - mean_second[:, None])).sum(1)
    return mean_first, mean_second, np.sqrt(spread / (lengths - half)[:, 0])


class InaluProtocol:
    """Mistry et al.'s iNALU protocol (their benchmark's `--reinit` and its
    gated penalty; experiments/single_layer_benchmark.py), as an
    `after_eval` hook of `StaticBenchmark.run` for a benchmark built with
    `penalty_gate=True`.

    - The penalty gate: their iNALU penalty counts only while the run's
      last logged interpolation MSE is below `gate_threshold` (and after
      iteration 10,000: the penalty schedule's part). At each evaluation
      each run's `penalty_gate` becomes 1 where its interpolation MSE is
      below `gate_threshold`, else 0 (NaN: 0).
    - Reinitialisation: theirs appends the last logged interpolation MSE
      to a list at every iteration and, every `interval` iterations once
      the list holds more than `max_stored` values, re-draws the weights
      when the mean of the list's first half is at most the mean plus the
      standard deviation of its second half and that mean is above
      `loss_threshold`, then empties the list (Adam's state untouched).
      The MSE changes only at evaluations, so at each evaluation the list
      each of their checks until the next one would see is known: this
      replays those checks, and a run whose check fires is reinitialised
      (`StaticBenchmark.reinitialize`, drawn by the iteration) at this
      evaluation, where theirs would at the firing iteration, up to
      `eval_every - interval` iterations later: the one difference. The
      list then holds what theirs holds after the reset (the stale MSE of
      the iterations left until the next evaluation).

    The last entry gets `"reinitialized"`: the runs reinitialised at it.
    The hook keeps each run's list; after a resume it replays the restored
    history (the same decisions, without touching the weights).

    Args:
        iterations: The iterations the benchmark trains (no check after).
        eval_every: Iterations between evaluations (`run`'s).
        interval: Iterations between two checks (`--reinit-epoch-interval`).
        max_stored: Values the list must exceed (`--reinit-max-stored-losses`).
        loss_threshold: `--reinit-loss-thr`.
        gate_threshold: The interpolation MSE below which the penalty counts.
        reinitialize: False for the gate alone.
    """

    def __init__(
        self,
        iterations,
        eval_every=1000,
        interval=10,
        max_stored=5000,
        loss_threshold=1.0,
        gate_threshold=1.0,
        reinitialize=True,
    ):
        self.iterations = validation.positive_int("iterations", iterations)
        self.eval_every = validation.positive_int("eval_every", eval_every)
        self.interval = validation.positive_int("interval", interval)
        self.max_stored = validation.non_negative_int("max_stored", max_stored)
        self.loss_threshold = float(loss_threshold)
        self.gate_threshold = float(gate_threshold)
        self.reinitialize = bool(reinitialize)
        self._lists = None  # per run, [values, counts] of its list
        self._seen = 0  # the history entries replayed

    def update(self, iteration, interpolation):
        """Adds the evaluation at `iteration` (per-run interpolation MSEs) to
        the runs' lists and replays their checks until the next evaluation;
        returns the mask of the runs whose check fired."""
        interpolation = np.asarray(interpolation, dtype=np.float64)
        if self._lists is None:
            self._lists = [[[], []] for _ in interpolation]
        stop = min(iteration + self.eval_every, self.iterations)
        fired = np.zeros(len(interpolation), bool)
        if iteration >= stop:
            return fired
        first = -(-max(iteration, 1) // self.interval) * self.interval
        checks = np.arange(first, stop, self.interval)  # their epochs checked
        for i, value in enumerate(interpolation):
            values, counts = self._lists[i]
            begin = iteration  # this value's first iteration in the list
            while self.reinitialize:
                stored = sum(counts)
                pending = checks[checks >= begin]
                due = pending[stored + pending - begin + 1 > self.max_stored]
                if not len(due):
                    break
                mean_first, mean_second, std_second = _half_statistics(
                    np.array([*values, value]),
                    np.array([*counts, stop - begin]),
                    stored + due - begin + 1,
                )
                hits = np.nonzero(
                    (mean_first <= mean_second + std_second)
                    & (mean_second > self.loss_threshold)
                )[0]
                if not hits.size:
                    break
                fired[i] = True  # emptied after that iteration's update
                values, counts, begin = [], [], int(due[hits[0]]) + 1
            if stop > begin:
                values.append(value)
                counts.append(stop - begin)
            self._lists[i] = [values, counts]
        return fired

    def __call__(self, bench, history):
        if bench.penalty_gate is None:
            raise ValueError(
                "Received a benchmark without a penalty gate, expected one built "
                "with `penalty_gate=True` for the InaluProtocol hook. Received: "
                f"penalty_gate={bench.penalty_gate!r}"
            )
        if self._seen != len(history) - 1:  # a resume: replay the history
            self._lists, self._seen = None, 0
            for entry in history[:-1]:
                self.update(entry["iteration"], entry["interpolation"])
        entry = history[-1]
        self._seen = len(history)
        interpolation = np.asarray(entry["interpolation"], dtype=np.float64)
        fired = self.update(entry["iteration"], interpolation)
        bench.penalty_gate.assign(
            (interpolation < self.gate_threshold).astype("float32")
        )
        runs = np.nonzero(fired)[0]
        bench.reinitialize(runs, entry["iteration"])
        entry["reinitialized"] = runs.tolist()
