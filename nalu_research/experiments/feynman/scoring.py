"""Ours and the peers, run and scored: an equation on one seed, or a user's
CSV file.

Each seed draws its own 10,000 training points (8,000 to fit, 2,000 held
out to choose and check) from the table's ranges, and 2,000 extrapolation
points from U[high, 2 * high], where the **extrapolation error** is the
median of `|y_hat - y| / |y|`; `recovery` says whether a formula is the
equation's (`nalu_research.tasks.feynman.recovered`: in SymPy, its
constants read within 1e-4).
"""

import csv
import math
import time
from pathlib import Path

import numpy as np

from nalu_research.experiments.feynman import peers
from nalu_research.experiments.feynman.formula import read
from nalu_research.experiments.feynman.search import search
from nalu_research.tasks import feynman as task

# The part of each seed's training points held out (to choose and check).
HELD_OUT = 0.2
EXTRAPOLATION_SIZE = 2000


def split(x, y):
    """`(x_fit, y_fit, x_held_out, y_held_out)`: the last `HELD_OUT` held out."""
    n = len(x) - int(round(HELD_OUT * len(x)))
    return x[:n], y[:n], x[n:], y[n:]


def median_relative_error(y_hat, y):
    """`median |y_hat - y| / |y|`: the extrapolation error."""
    with np.errstate(all="ignore"):
        value = float(np.median(np.abs(y_hat - y) / np.abs(y)))
    return value if math.isfinite(value) else math.inf


def ours(x, y, names, seed=0):
    """The recipe on `x -> y`: `{"expression", "exact", "seconds"}` (`exact`:
    `snap_weights` accepted the units)."""
    started = time.perf_counter()
    x_fit, y_fit, x_held, y_held = split(x, y)
    formula, _ = search(x_fit, y_fit, x_held, y_held, seed)
    expression, exact = read(formula, names, x_held, y_held)
    return {
        "expression": expression,
        "exact": exact,
        "seconds": time.perf_counter() - started,
    }


def evaluate(expression, symbols, x):
    """`expression` of `symbols` on `x`, in float64 (NaN where not real)."""
    import sympy

    if expression.has(sympy.zoo, sympy.oo, -sympy.oo, sympy.nan):
        return np.full(len(x), np.nan)
    with np.errstate(all="ignore"):
        values = sympy.lambdify(symbols, expression, "numpy")(*np.asarray(x).T)
    values = np.asarray(values, dtype="complex128")
    values = np.where(np.abs(values.imag) > 0, np.nan, values.real)
    return np.broadcast_to(values, (len(x),)).astype("float64")


def text(expression):
    """The expression as printed: its constants read where within 1e-6."""
    return str(task.read_constants(expression))


def recovery(expression, equation):
    """`{"formula", "recovered", "form"}`: `expression` as printed, and
    whether it is `equation`'s (constants within 1e-4) and of its form
    (within 1e-2)."""
    return {
        "formula": text(expression),
        "recovered": bool(task.recovered(expression, equation)),
        "form": bool(task.recovered(expression, equation, rtol=task.FORM_RTOL)),
    }


def run_equation(equation, seed, examples, noise, peers_run):
    """One equation, one seed: ours and gplearn's (if in `peers_run`) scores
    (a dict), and the data a ReLU network is fitted to, `(x_fit, y_fit,
    x_far, y_far)`."""
    x, y = equation.sample(examples, seed)
    if noise:
        y = task.noisy(y, seed, noise)
    x_far, y_far = equation.sample(EXTRAPOLATION_SIZE, seed, "extrapolation")
    x_fit, y_fit, _, _ = split(x, y)
    found = ours(x, y, equation.variables, seed)
    y_hat = evaluate(found["expression"], equation.symbols, x_far)
    result = {
        "seed": seed,
        "ours": {
            **recovery(found["expression"], equation),
            "extrapolation": median_relative_error(y_hat, y_far),
            "snapped": found["exact"],
            "seconds": found["seconds"],
        },
    }
    if "gplearn" in peers_run:
        started = time.perf_counter()
        estimator, generations = peers.gplearn_peer(
            x_fit, y_fit, found["seconds"], seed, peers.gplearn_functions(equation.form)
        )
        seconds = time.perf_counter() - started
        try:
            program = peers.gplearn_expression(estimator, equation.symbols)
            got = recovery(program, equation)
        except Exception:  # noqa: BLE001 (any program SymPy cannot read or print)
            got = dict(formula=str(estimator._program), recovered=False, form=False)
        result["gplearn"] = {
            **got,
            "extrapolation": median_relative_error(estimator.predict(x_far), y_far),
            "generations": generations,
            "seconds": seconds,
        }
    return result, (x_fit, y_fit, x_far, y_far)


def dense(data):
    """The ReLU networks of an equation's seeds (`data`: each seed's, as
    `run_equation` returns it): `{"extrapolation", "seconds"}`."""
    started = time.perf_counter()
    y_hat = peers.dense_peer(data, seed=0)
    errors = [median_relative_error(y_hat[:, i], d[3]) for i, d in enumerate(data)]
    return {"extrapolation": errors, "seconds": time.perf_counter() - started}


def read_csv(path):
    """`(names, x, y)` of a CSV file: a header of names, columns = variables,
    the last the target."""
    with Path(path).open(newline="") as file:
        rows = list(csv.reader(file))
    names, values = rows[0], np.array(rows[1:], dtype="float64")
    return names[:-1], values[:, :-1], values[:, -1]


def far_rows(x, quantile=0.9):
    """The rows held back to check extrapolation: those where any variable
    is above its `quantile`."""
    return np.any(x > np.quantile(x, quantile, axis=0), axis=1)
