"""The models of the image experiments of Trask et al. (2018).

The per-image convnet of the PyTorch MNIST example (`digit_encoder`, in the
designs of `ENCODERS`), the recurrent parts that read its outputs
(`recurrent_head`), the counting and addition model made of both
(`sequence_model`, Section 4.2, Table 2) and the parity classifier whose last
layer Table 4 varies (`parity_model`, Section 4.6). Their data is
`nalu_research.tasks.mnist`.

Example:

>>> from nalu_research.models import mnist
>>> model, encoder, head = mnist.sequence_model("nac", "count", (8, 8, 1))
>>> model.output.shape  # 10 counts, after any number of images
(None, 10)

Importing it imports no Keras (its names give the image experiments' options
before Keras is imported); the functions that build models do.
"""

import dataclasses
import numbers

import numpy as np

from nalu_research.tasks.mnist import NUM_CLASSES, output_size

# What the per-image encoder hands the recurrent part: its dense ReLU features,
# or the PyTorch MNIST example's classifier output (a 10-way log-softmax), the
# "output of the convnet" the paper's footnote says the recurrent part reads.
ENCODER_OUTPUTS = ("features", "log_softmax")


@dataclasses.dataclass(frozen=True)
class EncoderDesign:
    """One version of the PyTorch MNIST example's convnet (`digit_encoder`).

    `convolutions` holds `(filters, kernel size, max-pooled after)` per
    convolution (ReLU, no padding); `features` is the width of its dense
    ReLU layer; `dropout` its two dropout rates (after the convolutions, after
    the dense layer); `channel_dropout` whether the first drops whole
    channels (PyTorch's `Dropout2d`, Keras's `SpatialDropout2D`); `commit`
    the pytorch/examples commit that has it.
    """

    convolutions: tuple
    features: int
    dropout: tuple
    channel_dropout: bool
    commit: str


# The PyTorch MNIST example (github.com/pytorch/examples, mnist/main.py) at the
# two versions that matter here: "pytorch_2018", the one the paper's footnote
# linked when it appeared (August 2018; the same from March 2017 to December
# 2018), and "pytorch_2020", the one since October 2020 (3x3 convolutions,
# plain dropout), which every run here used before this option.
ENCODERS = {
    "pytorch_2020": EncoderDesign(
        convolutions=((32, 3, False), (64, 3, True)),
        features=128,
        dropout=(0.25, 0.5),
        channel_dropout=False,
        commit="0f0c913",
    ),
    "pytorch_2018": EncoderDesign(
        convolutions=((10, 5, True), (20, 5, True)),
        features=50,
        dropout=(0.5, 0.5),
        channel_dropout=True,
        commit="75e7c75",
    ),
}
DEFAULT_ENCODER = "pytorch_2020"

# The last layers of Table 4: the arguments of
# `keras_nalu.layers.ConstrainedDense` for each of its rows
# (`nalu_research.tasks.mnist.PAPER_TABLE_4`).
ABLATION_VARIANTS = {
    "Wx+b": {"weight_transform": "linear", "use_bias": True},
    "sigmoid(W)x+b": {"weight_transform": "sigmoid", "use_bias": True},
    "tanh(W)x+b": {"weight_transform": "tanh", "use_bias": True},
    "Wx+0": {"weight_transform": "linear", "use_bias": False},
    "sigmoid(W)x+0": {"weight_transform": "sigmoid", "use_bias": False},
    "tanh(W)x+0": {"weight_transform": "tanh", "use_bias": False},
    "NAC": {"weight_transform": "nac", "use_bias": False},
}

# Adam's learning rate of the models that do not train at the counting
# experiment's 1e-2: the NAU's clipped weights start 4 times larger than the NAC's
# effective ones, and at 1e-2 the encoder's ReLUs die (118 of 128 features
# never active; the loss stays at the constant prediction's, 0.93).
LEARNING_RATES = {"nau": 1e-3}

# The recurrent parts of `recurrent_head`, with their names in the tables.
RECURRENT_MODELS = {
    "lstm": "LSTM",
    "gru": "GRU",
    "rnn_tanh": "RNN tanh",
    "rnn_relu": "RNN ReLU",
    "nac": "NAC",
    "nalu": "NALU",
    "nau": "NAU",
}


def encoder_design(encoder):
    """The `EncoderDesign` that `encoder` (a name of `ENCODERS`) names."""
    from keras_nalu import validation

    validation.one_of("encoder", encoder, tuple(ENCODERS))
    return ENCODERS[encoder]


def dropout_rates(dropout, encoder=DEFAULT_ENCODER):
    """The encoder's two dropout rates `(after_pooling, after_dense)` that
    `dropout` names: True for the rates of the PyTorch example's design
    `encoder` (`ENCODERS`), False for none, or the two rates themselves, each
    in `[0, 1)`.

    >>> dropout_rates(True), dropout_rates(False), dropout_rates([0.25, 0])
    ((0.25, 0.5), (0.0, 0.0), (0.25, 0.0))
    >>> dropout_rates(True, "pytorch_2018")
    (0.5, 0.5)
    """
    from keras_nalu import validation

    if isinstance(dropout, (bool, np.bool_)):
        return encoder_design(encoder).dropout if dropout else (0.0, 0.0)
    try:
        rates = tuple(dropout_rate("dropout", rate) for rate in dropout)
    except (TypeError, validation.InvalidValueError):
        rates = ()
    if len(rates) != 2:
        raise validation.invalid(
            "dropout", "True, False or two rates, each in [0, 1)", dropout
        )
    return rates


def describe_dropout(dropout, encoder=DEFAULT_ENCODER):
    """`dropout` (`dropout_rates`) in words: "on" (the rates of the PyTorch
    example's design `encoder`), "off", or its two rates ("0.25 and 0")."""
    rates = dropout_rates(dropout, encoder)
    if rates == encoder_design(encoder).dropout:
        return "on"
    if rates == (0.0, 0.0):
        return "off"
    return f"{rates[0]:g} and {rates[1]:g}"


def dropout_rate(name, value):
    """`value` checked as a dropout rate, a number in `[0, 1)`: the float, or
    an `InvalidValueError` naming `name`."""
    if (
        isinstance(value, bool)
        or not isinstance(value, numbers.Real)
        or not 0 <= value < 1
    ):
        from keras_nalu.validation import invalid

        raise invalid(name, "a rate in [0, 1)", value)
    return float(value)


def digit_encoder(
    image_shape,
    features=None,
    dropout=True,
    output="features",
    encoder=DEFAULT_ENCODER,
):
    """The per-image convnet of the PyTorch MNIST example, in its design
    `encoder` (`ENCODERS`).

    Its convolutions (ReLU, max pooling of 2x2 where the design has it),
    dropout, a dense layer of `features` units (ReLU; default the design's:
    128, or 50 for "pytorch_2018") and dropout again. `dropout` sets the two
    rates (`dropout_rates`): True for the design's (0.25 and 0.5, or 0.5 and
    0.5 with whole channels dropped for "pytorch_2018"), False for none, or a
    pair of rates (the layers are there at any rate, so weights load across
    rates). With `output="features"` the dense layer (after its dropout) is
    the output; with `output="log_softmax"` the example's classifier follows,
    a dense layer of 10 and a log-softmax (the encoder still gets no label:
    only the task's targets train it).
    """
    import keras

    from keras_nalu import validation

    design = encoder_design(encoder)
    after_pooling, after_dense = dropout_rates(dropout, encoder)
    validation.one_of("output", output, ENCODER_OUTPUTS)
    if features is None:
        features = design.features
    features = validation.positive_int("features", features)
    image_shape = tuple(image_shape)
    size = min(image_shape[:2])
    layers = [keras.Input(image_shape)]
    for filters, kernel, pooled in design.convolutions:
        size = (size - kernel + 1) // (2 if pooled else 1)
        layers.append(keras.layers.Conv2D(filters, kernel, activation="relu"))
        if pooled:
            layers.append(keras.layers.MaxPooling2D(2))
    if size < 1:
        raise validation.invalid(
            "image_shape",
            f"images large enough for the convolutions of {encoder!r}",
            image_shape,
        )
    # Dropping after the pooling is dropping before it: both commute with
    # the ReLU and with a max over the pooled window (the scale is positive).
    drop = (
        keras.layers.SpatialDropout2D
        if design.channel_dropout
        else keras.layers.Dropout
    )
    layers += [
        drop(after_pooling),
        keras.layers.Flatten(),
        keras.layers.Dense(features, activation="relu"),
        keras.layers.Dropout(after_dense),
    ]
    if output == "log_softmax":
        layers += [
            keras.layers.Dense(NUM_CLASSES),
            keras.layers.Activation("log_softmax"),
        ]
    return keras.Sequential(layers, name="encoder")


def recurrent_head(kind, task, features=128, hidden=32):
    """The recurrent part, from `(batch, steps, features)` to the task's output.

    LSTM, GRU and SimpleRNN (`"rnn_tanh"`, `"rnn_relu"`) have `hidden` units
    and a linear readout; `"nac"`, `"nalu"` and `"nau"` are a `NACCell`,
    `NALUCell` or `NAUCell` (not in the paper; its state weights reach 1
    exactly: each unit reads only its own state, `diagonal_state=True`, and
    the sparsity penalty at 10 pulls that weight to 0 or 1)
    whose state is the output itself (10 counts, or the sum), with
    no readout, so a running count can extend to any length.
    """
    import keras

    from keras_nalu import validation
    from keras_nalu.layers import NACCell, NALUCell, NAUCell
    from keras_nalu.regularizers import Sparsity

    validation.one_of("kind", kind, tuple(RECURRENT_MODELS))
    units = output_size(task)
    hidden = validation.positive_int("hidden", hidden)
    inputs = keras.Input((None, features), name="features")
    cells = {
        "nac": NACCell,
        "nalu": NALUCell,
        "nau": lambda units: NAUCell(
            units, diagonal_state=True, recurrent_regularizer=Sparsity(10.0)
        ),
    }
    if kind in cells:
        cell = cells[kind](units)
        outputs = keras.layers.RNN(cell)(inputs)
    else:
        recurrent = {
            "lstm": lambda: keras.layers.LSTM(hidden),
            "gru": lambda: keras.layers.GRU(hidden),
            "rnn_tanh": lambda: keras.layers.SimpleRNN(hidden),
            "rnn_relu": lambda: keras.layers.SimpleRNN(hidden, activation="relu"),
        }[kind]()
        outputs = keras.layers.Dense(units)(recurrent(inputs))
    return keras.Model(inputs, outputs, name=f"{kind}_head")


def sequence_model(
    kind,
    task,
    image_shape,
    hidden=32,
    features=None,
    dropout=True,
    encoder_output="features",
    encoder=DEFAULT_ENCODER,
):
    """The counting / addition model: encoder per image, then a recurrent head.

    `encoder` is the design of the encoder (`digit_encoder`) and
    `encoder_output` its `output`: the head reads `features` values per image
    (default the design's width), or 10 log-probabilities.

    Returns `(model, convnet, head)`: `model` maps images `(batch, steps,
    *image_shape)` of any number of steps to the output of `task`;
    `convnet` (the encoder) and `head` are its two parts, sharing its weights, so that
    `head(encoder(images))` gives the same outputs from images embedded once.
    """
    import keras

    from keras_nalu import validation
    from nalu_research.layers import ImageSequenceEncoder

    validation.one_of("encoder_output", encoder_output, ENCODER_OUTPUTS)
    convnet = digit_encoder(image_shape, features, dropout, encoder_output, encoder)
    size = convnet.compute_output_shape((None,) + tuple(image_shape))[-1]
    head = recurrent_head(kind, task, size, hidden)
    images = keras.Input((None,) + tuple(image_shape), name="images")
    outputs = head(ImageSequenceEncoder(convnet, name="per_image")(images))
    return keras.Model(images, outputs, name=f"{kind}_{task}"), convnet, head


def parity_model(variant, canvas_shape, features=128, filters=(32, 64, 64)):
    """The parity classifier whose last layer is a variant of Table 4.

    Blocks of a 3x3 convolution (`filters`: 32, 64 and 64 by default; ReLU,
    same padding) and 2x2 max pooling, a dense layer of `features` units (ReLU),
    then the last layer `ConstrainedDense(2, **ABLATION_VARIANTS[variant])`
    into a softmax over the two parities.
    """
    import keras

    from keras_nalu import validation
    from keras_nalu.layers import ConstrainedDense

    validation.one_of("variant", variant, tuple(ABLATION_VARIANTS))
    layers = [keras.Input(tuple(canvas_shape), name="canvas")]
    for width in filters:
        layers += [
            keras.layers.Conv2D(width, 3, padding="same", activation="relu"),
            keras.layers.MaxPooling2D(2),
        ]
    layers += [
        keras.layers.Flatten(),
        keras.layers.Dense(features, activation="relu"),
        ConstrainedDense(2, **ABLATION_VARIANTS[variant], name="last_layer"),
        keras.layers.Softmax(),
    ]
    return keras.Sequential(layers, name="parity")
