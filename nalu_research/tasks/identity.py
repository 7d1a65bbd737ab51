"""The identity extrapolation task of Trask et al. (2018), Section 1.1, Appendix A.

An autoencoder maps a scalar to itself through 3 hidden layers of 8 units and a
linear output. It trains on inputs from [-5, 5] and is tested on [-20, 20]
(Figure 1: mean absolute error as a function of the input) and on the integers
-1000..1000 (Table 5: mean absolute error; 500 is the error of predicting 0).
The models differ only in the activation of the hidden layers; a model of NAC
layers (3 hidden NACs of 8, then a NAC of 1) is the paper's remedy.

The paper names PyTorch modules without their arguments; where PyTorch needs
or defaults to other values than Keras, these follow PyTorch: `Threshold` is
`x if x > 0.1 else 20` (the example of PyTorch's `nn.Threshold` docs; the paper
does not give its values), `LeakyReLU` has slope 0.01, `PReLU` learns one
slope per layer starting at 0.25, `Softshrink` has threshold 0.5. `CReLU` is
`concat(relu(x), relu(-x))`, which doubles each hidden layer's width (CReLU is
in the paper's Table 6, not Table 5). Weights start from Keras's defaults
(Glorot uniform, zero bias).

Example:

>>> from nalu_research.tasks.identity import identity_batches, identity_model
>>> model = identity_model("ReLU6")
>>> x, y = identity_batches(steps=10, batch_size=4, seed=0)
>>> x.shape, bool((x == y).all()), bool((abs(x) <= 5).all())
((40, 1), True, True)
>>> tuple(model(x).shape)
(40, 1)
"""

import numpy as np

from nalu_research import paper

TRAIN_RANGE = (-5.0, 5.0)
FIGURE_RANGE = (-20.0, 20.0)
TABLE_RANGE = (-1000, 1000)  # integers, both ends included


# The element-wise activations, in the order of the paper's Table 5: each a
# function of `keras.activations`, or of `nalu_research.layers` for the two
# whose PyTorch values Keras's differ from (`_PYTORCH`), by its name there.
# fmt: off
_ELEMENTWISE = {
    "Hardtanh": "hard_tanh", "ReLU6": "relu6", "Softsign": "softsign",
    "Tanh": "tanh", "Sigmoid": "sigmoid", "Threshold": "threshold",
    "SELU": "selu", "ELU": "elu", "Softshrink": "soft_shrink", "ReLU": "relu",
    "LeakyReLU": "leaky_relu", "Tanhshrink": "tanh_shrink",
    "Softplus": "softplus",
}
# fmt: on
_PYTORCH = ("Threshold", "LeakyReLU")

# Every activation of the paper's Table 5 (in its order), then CReLU.
ACTIVATIONS = (*_ELEMENTWISE, "PReLU", "None", "CReLU")

# What `identity_model` builds: an MLP per activation, and the NAC model.
MODELS = (*ACTIVATIONS, "NAC")

# Table 5 of the paper: mean absolute error on the integers -1000..1000,
# averaged over 100 models. "None" is reported as "<0.0001": an upper bound.
PAPER_TABLE_5 = paper.table("table_5")


def identity_model(name, hidden=8, depth=3):
    """The autoencoder of Figure 1 and Table 5 for one of `MODELS`.

    `depth` hidden layers of `hidden` units with the activation `name`, then a
    linear `Dense(1)`. For "PReLU" and "CReLU" each hidden `Dense` is followed
    by a `keras.layers.PReLU` (one slope per layer, starting at 0.25) or by
    `crelu` (twice the width). "None" is linear. "NAC" is `depth` layers
    `NAC(hidden)`, then `NAC(1)`.

    Args:
        name: One of `MODELS`.
        hidden: Units of each hidden layer.
        depth: Number of hidden layers.

    Returns:
        An uncompiled `keras.Sequential` from shape `(batch, 1)` to `(batch, 1)`.
    """
    import keras

    from keras_nalu import NAC, validation
    from nalu_research import layers as ours

    if name not in MODELS:
        raise ValueError(
            f"Received an invalid value for `name`, expected one of {MODELS}. "
            f"Received: name={name!r}"
        )
    hidden = validation.positive_int("hidden", hidden)
    depth = validation.positive_int("depth", depth)
    activation = None
    if name in _ELEMENTWISE:
        functions = ours if name in _PYTORCH else keras.activations
        activation = getattr(functions, _ELEMENTWISE[name])
    layers = [keras.Input((1,), name="x")]
    if name == "NAC":
        layers += [NAC(hidden) for _ in range(depth)] + [NAC(1)]
    else:
        for _ in range(depth):
            layers.append(keras.layers.Dense(hidden, activation=activation))
            if name == "PReLU":
                layers.append(
                    keras.layers.PReLU(
                        alpha_initializer=keras.initializers.Constant(0.25),
                        shared_axes=[1],
                    )
                )
            elif name == "CReLU":
                layers.append(ours.CReLU())
        layers.append(keras.layers.Dense(1))
    return keras.Sequential(layers, name=f"identity_{name.lower()}")


def identity_batches(steps, batch_size=128, seed=0, value_range=TRAIN_RANGE):
    """`steps` fresh training batches for the identity, as one array pair.

    Returns `(x, y)`, float32 of shape `(steps * batch_size, 1)`, `x` drawn
    uniformly from `value_range` by `seed` and `y` equal to `x`. Train with
    `model.fit(x, y, batch_size=batch_size, shuffle=False)`: one epoch is
    `steps` steps, each on examples no other step sees.
    """
    from keras_nalu import validation

    steps = validation.positive_int("steps", steps)
    batch_size = validation.positive_int("batch_size", batch_size)
    low, high = value_range
    rng = np.random.default_rng(seed)
    x = rng.uniform(low, high, size=(steps * batch_size, 1)).astype(np.float32)
    return x, x.copy()


def figure_inputs(points=401, value_range=FIGURE_RANGE):
    """The inputs of Figure 1: `points` evenly spaced values, shape `(points, 1)`."""
    from keras_nalu import validation

    points = validation.positive_int("points", points)
    return np.linspace(*value_range, points, dtype=np.float32)[:, None]


def table_inputs(value_range=TABLE_RANGE):
    """The inputs of Table 5: every integer of `value_range`, shape `(n, 1)`."""
    low, high = value_range
    return np.arange(low, high + 1, dtype=np.float32)[:, None]


def absolute_errors(model, x):
    """`|model(x) - x|` for inputs `x` of shape `(n, 1)`, as float64 `(n,)`."""
    from keras import ops

    prediction = ops.convert_to_numpy(model(x, training=False))
    return np.abs(prediction.astype(np.float64) - np.asarray(x, np.float64))[:, 0]
