"""The seed-batched engine's models, resolved once from the units' registry.

A model of the engine is named (`MODELS`, or any one or two registered
units: `"nau-npu"`, `"single-npu"`, `"nau-my_units>Cube"`) and resolved into
an `EngineModel`: its configured layers, one per position, whose own `math`,
`penalty`, `effective_weights` and `exact_values` the engine applies to the
runs' stacked weights (`nalu_research.seed_batched`). The package's units
are found by their Keras registration (`LAYERS`), so a unit added to the
package, or a user's own registered one, needs no change here.

The models' names (`MODELS`, `unit_kinds` of them) need no Keras: importing
this module imports none, and `LAYERS` reads the registry (importing Keras)
when first asked for.
"""

import argparse
import contextlib
import functools

import numpy as np

from nalu_research.tasks.metrics import sparsity_error

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


@functools.cache
def _package_units():
    """`{name: class}` of the package's arithmetic units (not the cells), by
    their class names in lower case: every `keras_nalu.ArithmeticUnit`
    registered under the package name, so a unit added to the package
    appears here with no change to this module."""
    import keras

    from keras_nalu import ArithmeticUnit

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


def __getattr__(name):
    # `LAYERS`: the unit layers, by the names the unit models use ("nau",
    # "nmu", "npu", ...), read from Keras's registry when first asked for; a
    # unit of a user's own is named by its registered name ("package>Name").
    if name == "LAYERS":
        return _package_units()
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


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
    import keras

    from keras_nalu import ArithmeticUnit

    if kind in _package_units():
        return _package_units()[kind]
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
        f"{', '.join(_package_units())}, or a registered 'package>Name'). "
        f"Received: model={model!r}"
    )


def configured_unit(kind, units, options=None):
    """A new unit of the name `kind` with `units` outputs, its defaults
    changed by `options[kind]`, a dict of constructor arguments (e.g.
    `{"nmru": {"sign_retrieval": True}}`): the layer checks them here."""
    return unit_class(kind)(units, **(options or {}).get(kind, {}))


def check_options(options):
    ok = options is None or (
        isinstance(options, dict)
        and all(unit_class(kind) and isinstance(v, dict) for kind, v in options.items())
    )
    if not ok:
        raise ValueError(
            "Received an invalid value for `layer_options`, expected None or "
            f"{{kind: {{argument: value}}}} with kinds of {tuple(_package_units())} or "
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
    import keras

    if initializer is None and (dtype is None or "float" in str(dtype)):
        initializer = "glorot_uniform"  # add_weight's default
    if isinstance(initializer, (str, dict)):
        initializer = keras.initializers.get(initializer)
    if isinstance(initializer, keras.initializers.Initializer):
        config = initializer.get_config()
        if "seed" in config:
            return type(initializer).from_config({**config, "seed": generator})
    return initializer


def layer_weights(weights, layer):
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
        import keras

        from keras_nalu import validation
        from keras_nalu.initializers import NMUUniform

        self.kinds = unit_kinds(model)  # raises for an unknown model
        self.name = model
        input_size = validation.positive_int("input_size", input_size)
        check_options(layer_options)
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
        import keras

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
        from keras_nalu import ArithmeticUnit

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
        from keras import ops

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
        import keras
        from keras import ops

        from keras_nalu import ops as nalu_ops

        if self.kinds is not None:
            h = x
            for i, unit in enumerate(self.layers):
                h = unit.math(h, layer_weights(weights, i), training)
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
        return self.layers[layer].penalty(layer_weights(weights, layer))

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
        from keras import ops

        first = self.layers[0]
        values = getattr(first, "exact_values", {}).get("kernel")
        if self.kinds is None or values is None:
            return None
        kernel = first.effective_weights(layer_weights(weights, 0)).get("kernel")
        if kernel is None:
            return None
        return [sparsity_error(w, values) for w in ops.convert_to_numpy(kernel)]

    def keras_model(self, weights, index):
        """Run `index` of the stacked `weights` as a `keras.Sequential` of
        copies of the layers (a unit model's: an MLP's activation sits
        between its layers)."""
        import keras
        from keras import ops

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
