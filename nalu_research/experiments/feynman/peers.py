"""The peers: gplearn's `SymbolicRegressor` and a ReLU network.

gplearn (population 1,000, its default settings otherwise, the function set
`add, sub, mul, div, sqrt`, plus `log, sin, cos` for the transcendental
equations) on the same 8,000 points, given the wall time our recipe took on
that equation and seed (at least one generation), its program read into
SymPy and scored the same way; and a ReLU network (two hidden layers of 64,
`keras.layers.EinsumDense`: one network per seed side by side, on
standardized inputs and targets, Adam 1e-3, 30 epochs of batches of 256),
for the extrapolation error only.
"""

import time
import warnings

import numpy as np

GPLEARN_FUNCTIONS = ("add", "sub", "mul", "div", "sqrt")
GPLEARN_TRANSCENDENTAL = ("log", "sin", "cos")
PEERS = ("gplearn", "dense")
DENSE = {"hidden": 64, "epochs": 30, "batch_size": 256, "learning_rate": 1e-3}


def gplearn_functions(form):
    """gplearn's function set for an equation of `form`."""
    extra = GPLEARN_TRANSCENDENTAL if form == "transcendental" else ()
    return GPLEARN_FUNCTIONS + extra


def gplearn_peer(x, y, seconds, seed, functions):
    """gplearn's `SymbolicRegressor` on `x -> y`, a generation at a time
    (`warm_start`) until `seconds` have passed: `(estimator, generations)`."""
    from gplearn.genetic import SymbolicRegressor

    estimator = SymbolicRegressor(
        population_size=1000,
        generations=1,
        function_set=functions,
        warm_start=True,
        random_state=seed,
        n_jobs=1,
    )
    started, generations = time.perf_counter(), 1
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        estimator.fit(x, y)
        while time.perf_counter() - started < seconds:
            generations += 1
            estimator.set_params(generations=generations)
            estimator.fit(x, y)
    return estimator, generations


def gplearn_expression(estimator, symbols):
    """gplearn's program as a SymPy expression of `symbols`, its constants in
    full (its text rounds them to 3 decimals); its protected `div`, `sqrt`
    and `log` as the plain functions, of `|x|` for the roots and logarithms."""
    import sympy

    def small(a):  # gplearn's protection, where it applies to a number
        return a.is_number and abs(float(a)) < 0.001

    functions = {
        "add": lambda a, b: a + b,
        "sub": lambda a, b: a - b,
        "mul": lambda a, b: a * b,
        "div": lambda a, b: sympy.Integer(1) if small(b) else a / b,
        "sqrt": lambda a: sympy.sqrt(sympy.Abs(a)),
        "log": lambda a: sympy.Integer(0) if small(a) else sympy.log(sympy.Abs(a)),
        "sin": sympy.sin,
        "cos": sympy.cos,
    }
    nodes = iter(estimator._program.program)  # prefix order

    def build():
        node = next(nodes)
        if isinstance(node, (int, np.integer)):
            return symbols[int(node)]
        if isinstance(node, (float, np.floating)):
            return sympy.Float(float(node), 15)
        arguments = [build() for _ in range(node.arity)]
        return functions[node.name](*arguments)

    return build()


def dense_peer(seeds_data, seed):
    """The ReLU network of every seed, side by side: its predictions on each
    seed's extrapolation points, `(N, seeds)`. `seeds_data` holds each
    seed's `(x, y, x_far, y_far)`."""
    import keras

    keras.utils.set_random_seed(seed)
    # (N, seeds, D), (N, seeds), and the far points (N_far, seeds, D).
    x, y, far = (np.stack([s[k] for s in seeds_data], axis=1) for k in range(3))
    mean, std = x.mean(axis=0), x.std(axis=0) + 1e-12
    y_mean, y_std = y.mean(axis=0), y.std(axis=0) + 1e-12
    seeds, hidden = x.shape[1], DENSE["hidden"]
    z = inputs = keras.Input(x.shape[1:])
    for spec in ("bsd,sdh->bsh", "bsk,skh->bsh"):  # the two hidden layers
        z = keras.layers.EinsumDense(spec, (seeds, hidden), "relu", bias_axes="sh")(z)
    out = keras.layers.EinsumDense("bsh,sh->bs", (seeds,), bias_axes="s")(z)
    model = keras.Model(inputs, out)
    model.compile(keras.optimizers.Adam(DENSE["learning_rate"]), "mse")
    model.fit(
        ((x - mean) / std).astype("float32"),
        ((y - y_mean) / y_std).astype("float32"),
        batch_size=DENSE["batch_size"],
        epochs=DENSE["epochs"],
        verbose=0,
    )
    predicted = model.predict(((far - mean) / std).astype("float32"), verbose=0)
    return predicted.astype("float64") * y_std + y_mean
