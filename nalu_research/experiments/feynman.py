"""The Feynman equations: formulas from data, beside a symbolic-regression library.

The 100 equations of Udrescu & Tegmark (2020), `nalu_research.tasks.feynman`:
each seed draws its own 10,000 training points (8,000 to fit, 2,000 held out
to choose and check) from the table's ranges, and 2,000 extrapolation points
from U[high, 2 * high]. One recipe for every equation, chosen before any
equation's answer was looked at, finds a formula of this shape:

    y = C * prod_i x_i^a_i * prod_k S_k^b_k,   S_k = 1 + sum_m c_km x^r_km

a constant times a product of powers of the inputs and of at most two sums
(`SHAPES`). As units, it is a `ScaledPower` (a power unit with a constant,
this module's) over the inputs and a `keras_nalu.NAU` that adds the terms of
another `ScaledPower`: products of powers (no sum), sums (one sum to the
power 1), rational functions (sums to the power -1) and roots of sums (to
the power +-1/2) are all one model.

**How the weights are found.** In log space the outer unit is linear:
`log|y| = log|C| + sum_i a_i log x_i + sum_k b_k log|S_k|`. A product of
powers is therefore an ordinary least-squares fit (convex: the fit finds it
whenever it exists). A sum's exponents `r_km` are discrete choices, which
gradient descent from random starts did not find in development (Adam over
64 restarts: the right structure in a handful at best); so they are
searched: every monomial of one to three inputs with exponents in {-2, -1,
1, 2} and of four inputs with exponents +-1 (`monomials`) is tried as the
term `c x^r` of a new sum `S = 1 + c x^r`, with `c` on a grid and the power
`b` among `BETAS`, the outer unit solved in closed form for each (variable
projection), on `SCREEN_SIZE` training points. The `TOP` best are fitted by
Levenberg-Marquardt on all the fitting points (every constant and exponent
of the outer unit, `c` and `b`), their exponents rounded to halves (kept
only where the fitting error does not get worse) and the constants fitted
again, in float64. From the `EXTEND` best, one more term is searched the same
way, either a second sum or a second term of the first. Among all of these
and the product of powers, the simplest whose held-out error is within 10%
of the best is the answer (`search`).

The answer is loaded into the units (float64), checked with
`keras_nalu.snap_weights` on the held-out points and written by
`keras_nalu.expressions`; its constants are read as simple numbers where
within 1e-6 (`nalu_research.tasks.feynman.read_constant`: `1/(4*pi)`,
`3/5`). An equation is **recovered** on a seed when that formula, its
constants read within 1e-4, simplifies in SymPy to the true one
(`nalu_research.tasks.feynman.recovered`); its **extrapolation error** is the
median of `|y_hat - y| / |y|` over the extrapolation points.

**The peers.** gplearn's `SymbolicRegressor` (population 1,000, its default
settings otherwise, the function set `add, sub, mul, div, sqrt`, plus `log,
sin, cos` for the transcendental equations) on the same 8,000 points, given
the wall time our recipe took on that equation and seed (at least one
generation), its program read into SymPy and scored the same way; and a ReLU
network (two hidden layers of 64, `keras.layers.EinsumDense`: one network
per seed side by side, on standardized inputs and targets, Adam 1e-3, 30
epochs of batches of 256), for the extrapolation error only.

    python examples/feynman.py --equation I.12.2        # one equation
    python examples/feynman.py --csv data.csv           # your data
    python examples/feynman.py \\
        --json docs/experiments/feynman/feynman.json    # the page's run
"""

import csv
import dataclasses
import itertools
import math
import time
import warnings
from pathlib import Path

import keras
import numpy as np
from keras import ops

from keras_nalu import NAU, ArithmeticUnit, expressions, snap_weights
from keras_nalu import ops as nalu_ops
from nalu_research.arguments import Shared, add_selection, non_negative_float
from nalu_research.experiment import Experiment
from nalu_research.monitoring import input_file, markdown_table
from nalu_research.tasks import feynman as task

# The exact values of an exponent: halves.
HALVES = tuple(v / 2 for v in range(-12, 13))
# The powers a sum may be raised to.
BETAS = (-2.0, -1.5, -1.0, -0.5, 0.5, 1.0, 1.5, 2.0)
# The part of each seed's training points held out (to choose and check).
HELD_OUT = 0.2
EXTRAPOLATION_SIZE = 2000
# The search: points each candidate term is screened on, the grid of its
# constant (times the term's median size), how many screened candidates
# are fitted, how many fitted ones are extended by one more term.
SCREEN_SIZE = 400
GRID = tuple(s * 10.0**e for s in (1, -1) for e in np.linspace(-2.5, 2.5, 11))
TOP = 12
EXTEND = 4
EXTEND_AS_SCREENED = 2
# The points of the first fit of each candidate.
FIT_SIZE = 2000
# Log-space fits leave out the points nearest a zero of the target (below
# NEAR_ZERO times its median size), where log|y| is steepest; the `PRUNE`
# best formulas are tried less one term each.
NEAR_ZERO = 0.05
PRUNE = 4
# The largest |log C| of a formula: C stays within float64's range.
LARGEST_LOG = 700.0
# A simpler formula wins when its held-out error is within this factor of
# the best's, or below ROUNDOFF (float64's: a relative error of 1e-10).
SIMPLER = 1.1
ROUNDOFF = 1e-20
# The largest held-out error `snap_weights` accepts (relative), and the
# extrapolation error below which an equation counts as extrapolated.
SNAP_RTOL = 1e-6
EXTRAPOLATED = 1e-5
GPLEARN_FUNCTIONS = ("add", "sub", "mul", "div", "sqrt")
GPLEARN_TRANSCENDENTAL = ("log", "sin", "cos")
PEERS = ("gplearn", "dense")
DENSE = {"hidden": 64, "epochs": 30, "batch_size": 256, "learning_rate": 1e-3}


@keras.saving.register_keras_serializable(package="nalu_research")
class ScaledPower(ArithmeticUnit):
    """A power unit with a constant: `y_j = s_j * prod_i h_i^W_ij`.

    The magnitude is `|s_j| exp(sum_i W_ij log|h_i|)` and the sign that of
    `s_j` times `cos(pi sum_i W_ij [h_i < 0])` (the `RealNPU`'s: the real
    power of a negative input where the exponent is an integer). The
    exponents `W` are any real numbers and snap to halves (`HALVES`: square
    roots); the constant `s` (`scale`) does not snap: it is a number to read.

    Args:
        units: Positive integer, dimensionality of the output space.
        kernel_initializer: Initializer for `kernel`, the exponents.
        scale_initializer: Initializer for `scale`, the constants.
        **kwargs: Base layer keyword arguments, such as `name` and `dtype`.

    Example:

    >>> import numpy as np, keras
    >>> layer = ScaledPower(1, kernel_initializer=keras.initializers.Constant(
    ...     [[1.0], [-2.0]]), scale_initializer=keras.initializers.Constant(0.5))
    >>> keras.ops.convert_to_numpy(layer(np.array([[6.0, 2.0]]))).round(6).tolist()
    [[0.75]]
    """

    exact_values = {"kernel": HALVES}

    def __init__(
        self, units, kernel_initializer="zeros", scale_initializer="ones", **kwargs
    ):
        super().__init__(**kwargs)
        if not isinstance(units, int) or isinstance(units, bool) or units < 1:
            raise ValueError(
                "Received an invalid value for `units`, expected a positive "
                f"integer. Received: units={units!r}"
            )
        self.units = units
        self._set_weight_arguments(
            kernel=(kernel_initializer, None, None),
            scale=(scale_initializer, None, None),
        )

    def build(self, input_shape):
        size = input_shape[-1]
        if size is None:
            raise ValueError(
                f"The last axis of the input of {self.name!r} must be known. "
                f"Received: input_shape={input_shape}"
            )
        self.kernel = self._add_weight_from_arguments("kernel", (size, self.units))
        self.scale = self._add_weight_from_arguments("scale", (self.units,))

    def effective_weights(self, weights=None):
        weights = self.unit_weights() if weights is None else weights
        return {"kernel": weights["kernel"], "scale": weights["scale"]}

    def math(self, x, weights, training=False):
        w, s = weights["kernel"], weights["scale"]
        tiny = np.finfo(keras.backend.standardize_dtype(x.dtype)).tiny
        log_h = ops.log(ops.maximum(ops.abs(x), tiny))
        negative = ops.cast(x < 0, x.dtype)
        sign = ops.cos(np.pi * nalu_ops.matmul(negative, w))
        return ops.expand_dims(s, -2) * ops.exp(nalu_ops.matmul(log_h, w)) * sign

    def expression(self, h, writer, x=None):
        """`s_j * prod_i h_i**W_ij`: exponents within `atol` of a half as
        that half, `s_j` as a float of full precision (or an integer)."""
        sympy = writer.sympy
        w = keras.ops.convert_to_numpy(self.kernel).astype("float64")
        s = keras.ops.convert_to_numpy(self.scale).astype("float64")
        out = []
        for j in range(self.units):
            factors = [_constant(sympy, s[j])]
            for i, hi in enumerate(h):
                exponent = _exponent(sympy, w[i, j], writer.atol)
                if exponent != 0:
                    factors.append(hi**exponent)
            out.append(sympy.Mul(*factors))
        return out

    def compute_output_shape(self, input_shape):
        return tuple(input_shape)[:-1] + (self.units,)

    def get_config(self):
        return {
            **super().get_config(),
            "units": self.units,
            "kernel_initializer": keras.initializers.serialize(self.kernel_initializer),
            "scale_initializer": keras.initializers.serialize(self.scale_initializer),
        }


def _constant(sympy, value):
    if math.isfinite(value) and abs(value) < 2**53 and value == round(value):
        return sympy.Integer(int(value))
    return sympy.Float(value, 15)


def _exponent(sympy, value, atol):
    halves = round(2 * value)
    if abs(2 * value - halves) <= 2 * atol:
        return sympy.Rational(halves, 2)
    return sympy.Float(value, 4)


# ---- The formulas the recipe searches ----------------------------------------


@dataclasses.dataclass
class Formula:
    """`y = sign * exp(log_scale) * prod_i x_i^a_i * prod_k S_k^betas_k`
    with `S_k = 1 + sum_m terms[k][m][0] * x^terms[k][m][1]`.

    Attributes:
        a: The exponents of the inputs, `(D,)`.
        log_scale: `log|C|`.
        sign: The sign of `C`, +1 or -1.
        betas: The power of each sum.
        terms: Each sum's terms, `[(c, r), ...]`, `r` the exponents `(D,)`.
    """

    a: np.ndarray
    log_scale: float
    sign: float = 1.0
    betas: list = dataclasses.field(default_factory=list)
    terms: list = dataclasses.field(default_factory=list)

    @property
    def finite(self):
        """Whether every parameter is finite and the constant `C` within
        float64's range."""
        v = self.vector()
        return bool(np.all(np.isfinite(v)) and abs(self.log_scale) < LARGEST_LOG)

    @property
    def complexity(self):
        """Sums plus their terms (the 1s left out): how the search ranks
        formulas that fit alike."""
        return len(self.betas) + sum(len(t) for t in self.terms)

    def sums(self, log_x):
        """The sums `S_k`, `(N, K)`."""
        columns = [
            1 + sum(c * np.exp(log_x @ r) for c, r in terms) for terms in self.terms
        ]
        return np.stack(columns, axis=1) if columns else np.ones((len(log_x), 0))

    def log_magnitude(self, log_x):
        with np.errstate(all="ignore"):
            log_s = np.log(np.maximum(np.abs(self.sums(log_x)), 1e-300))
        return self.log_scale + log_x @ self.a + log_s @ np.asarray(self.betas)

    def __call__(self, x):
        """The formula on inputs `x` `(N, D)`, in float64."""
        log_x = np.log(np.asarray(x, dtype="float64"))
        s = self.sums(log_x)
        sign = self.sign * np.prod(
            np.where(s < 0, np.cos(np.pi * np.asarray(self.betas)), 1.0), axis=1
        )
        with np.errstate(all="ignore"):
            return sign * np.exp(self.log_magnitude(log_x))

    # The parameters the fit moves: log_scale, a, betas, each c.
    def vector(self):
        cs = [c for terms in self.terms for c, _ in terms]
        return np.concatenate([[self.log_scale], self.a, self.betas, cs])

    def with_vector(self, v):
        d, k = len(self.a), len(self.betas)
        cs = iter(v[1 + d + k :])
        return dataclasses.replace(
            self,
            log_scale=float(v[0]),
            a=np.array(v[1 : 1 + d]),
            betas=[float(b) for b in v[1 + d : 1 + d + k]],
            terms=[[(float(next(cs)), r) for _, r in t] for t in self.terms],
        )

    def jacobian(self, log_x):
        """d log|y| / d vector(), `(N, P)`."""
        s = self.sums(log_x)
        with np.errstate(all="ignore"):
            log_s = np.log(np.maximum(np.abs(s), 1e-300))
        columns = [np.ones(len(log_x)), *log_x.T, *log_s.T]
        for k, terms in enumerate(self.terms):
            for _, r in terms:
                columns.append(self.betas[k] * np.exp(log_x @ r) / s[:, k])
        return np.stack(columns, axis=1)

    def model(self, names=None):
        """The formula as units: `ScaledPower` over `[x, NAU(ScaledPower(x))]`
        (only the outer unit for a product of powers), in float64."""
        d = len(self.a)
        x = keras.Input((d,), dtype="float64")
        # The weights are set after the layers are built: a `Constant`
        # initializer would round them to float32.
        weights = []
        if not self.terms:
            inputs = x
        else:
            # Unit 0 is the constant 1 every sum starts with; the others are
            # the terms |c| x^r, added by the NAU with the sign of c.
            flat = [(k, c, r) for k, t in enumerate(self.terms) for c, r in t]
            exponents = np.stack([np.zeros(d)] + [r for _, _, r in flat], axis=1)
            scales = np.array([1.0] + [abs(c) for _, c, _ in flat])
            added = np.zeros((len(flat) + 1, len(self.terms)))
            added[0] = 1.0
            for m, (k, c, _) in enumerate(flat, 1):
                added[m, k] = np.sign(c)
            terms = ScaledPower(len(scales), dtype="float64", name="terms")
            sums = NAU(len(self.terms), dtype="float64", name="sums")
            inputs = keras.layers.Concatenate(dtype="float64")([x, sums(terms(x))])
            weights = [(terms.kernel, exponents), (terms.scale, scales)]
            weights.append((sums.kernel, added))
        outer = ScaledPower(1, dtype="float64", name="outer")
        model = keras.Model(x, outer(inputs))
        weights.append((outer.kernel, np.array([*self.a, *self.betas])[:, None]))
        weights.append((outer.scale, [self.sign * math.exp(self.log_scale)]))
        for variable, value in weights:
            variable.assign(np.asarray(value, dtype="float64"))
        return model


def monomials(d):
    """The exponent vectors a term may have, `(n, d)`: one to three inputs
    with exponents in {-2, -1, 1, 2}, four with exponents +-1."""
    found = []
    for size, values in ((1, (-2, -1, 1, 2)), (2, (-2, -1, 1, 2)),
                         (3, (-2, -1, 1, 2)), (4, (-1, 1))):  # fmt: skip
        for places in itertools.combinations(range(d), size):
            for powers in itertools.product(values, repeat=size):
                r = np.zeros(d)
                r[list(places)] = powers
                found.append(r)
    return np.array(found).reshape(-1, d)


def _basis(log_x):
    """An orthonormal basis of the outer unit's free part, `[log x, 1]`."""
    q, _ = np.linalg.qr(np.column_stack([log_x, np.ones(len(log_x))]))
    return q


def screen(log_x, target, base, divisor, dictionary, betas, keep):
    """The `keep` best terms `c x^r` to add: `(error, r index, c, beta)`.

    The formula's log-magnitude is `base` (its fixed part) plus, for a term
    `c x^r`, `beta * log|1 + c x^r / divisor|` (`divisor` 1 for a new sum;
    a sum's value to add the term to it, `betas` then its power alone), and
    the outer unit's free part (`_basis`), solved by least squares.
    """
    q = _basis(log_x)
    z = target - base
    z = z - q @ (q.T @ z)
    ratio = np.exp(np.clip(log_x @ dictionary.T, -300, 300)) / divisor[:, None]
    size = np.median(np.abs(ratio), axis=0)
    betas = np.asarray(betas)
    found = []
    for g in GRID:
        c = g / size
        with np.errstate(all="ignore"):
            column = np.log(np.maximum(np.abs(1 + c * ratio), 1e-300))
        column = column - q @ (q.T @ column)
        zl = z @ column
        ll = np.sum(column * column, axis=0)
        # |z - beta l|^2 for each beta, the best of them per term.
        errors = z @ z - 2 * betas[:, None] * zl + betas[:, None] ** 2 * ll
        best = np.argmin(errors, axis=0)
        error = errors[best, np.arange(len(best))]
        for i in np.argsort(error)[:keep]:
            found.append((float(error[i]), int(i), float(c[i]), float(betas[best[i]])))
    found.sort(key=lambda f: f[0])
    unique, seen = [], set()
    for error, i, c, beta in found:  # one candidate per term and power
        if (i, beta) not in seen:
            seen.add((i, beta))
            unique.append((error, i, c, beta))
    return unique[:keep]


def fit(formula, log_x, target, free=None):
    """`formula` with its parameters (those `free` marks, default all)
    fitted by Levenberg-Marquardt to `log|y| = target`, in float64."""
    from scipy.optimize import least_squares

    v0 = formula.vector()
    free = np.ones(len(v0), bool) if free is None else free

    def vector(u):
        v = v0.copy()
        v[free] = u
        return v

    def residual(u):
        r = formula.with_vector(vector(u)).log_magnitude(log_x) - target
        return np.nan_to_num(r, nan=1e3, posinf=1e3, neginf=-1e3)

    def jacobian(u):
        j = formula.with_vector(vector(u)).jacobian(log_x)[:, free]
        return np.nan_to_num(j, nan=0.0, posinf=0.0, neginf=0.0)

    try:
        with np.errstate(all="ignore"):
            u = least_squares(
                residual, v0[free], jac=jacobian, method="lm", max_nfev=100
            ).x
    except (ValueError, np.linalg.LinAlgError):
        return formula
    return formula.with_vector(vector(u))


def snapped(formula, log_x, target):
    """`formula` with every exponent of its outer unit (`a`, `betas`) rounded
    to a half and its constants fitted again; `formula` itself where that
    fits the points worse."""
    rounded = dataclasses.replace(
        formula,
        a=np.round(formula.a * 2) / 2,
        betas=[round(b * 2) / 2 for b in formula.betas],
    )
    if any(b == 0 for b in rounded.betas):
        return formula
    d, k = len(formula.a), len(formula.betas)
    free = np.ones(len(formula.vector()), bool)
    free[1 : 1 + d + k] = False
    rounded = fit(rounded, log_x, target, free)
    if rms(rounded, log_x, target) <= rms(formula, log_x, target) * 1.01 + 1e-12:
        return rounded
    return formula


def rms(formula, log_x, target):
    with np.errstate(all="ignore"):
        r = formula.log_magnitude(log_x) - target
    value = float(np.sqrt(np.mean(r * r)))
    return value if math.isfinite(value) else math.inf


def relative_error(y_hat, y):
    """`mean((y_hat - y)^2) / mean(y^2)`: the error that chooses."""
    with np.errstate(all="ignore"):
        value = float(np.mean((y_hat - y) ** 2) / np.mean(y * y))
    return value if math.isfinite(value) else math.inf


def median_relative_error(y_hat, y):
    """`median |y_hat - y| / |y|`: the extrapolation error."""
    with np.errstate(all="ignore"):
        value = float(np.median(np.abs(y_hat - y) / np.abs(y)))
    return value if math.isfinite(value) else math.inf


def signed(formula, x, y):
    """`formula` with the sign of its constant that fits `y`."""
    with np.errstate(all="ignore"):
        agree = np.nansum(formula(x) * y)
    return dataclasses.replace(formula, sign=-formula.sign) if agree < 0 else formula


def search(x, y, x_held_out, y_held_out, seed=0):
    """The recipe (see the module): the formula it chooses for `x -> y`,
    and every formula it compared, `(formula, held-out error)`."""
    rng = np.random.default_rng(seed)
    size = np.abs(y)
    kept = size >= NEAR_ZERO * np.median(size)
    log_x, target = np.log(x[kept]), np.log(size[kept])
    d = x.shape[1]
    pick = rng.choice(len(log_x), size=min(SCREEN_SIZE, len(log_x)), replace=False)
    log_s, target_s = log_x[pick], target[pick]
    some = rng.choice(len(log_x), size=min(FIT_SIZE, len(log_x)), replace=False)
    log_f, target_f = log_x[some], target[some]
    dictionary = monomials(d)

    def fitted(formula, powers=True):
        """Its constants and the outer unit's exponents (the powers of its
        sums only where `powers`) fitted on `FIT_SIZE` points, then the
        exponents snapped (where that fits no worse) and the constants
        fitted again on all."""
        free = np.ones(len(formula.vector()), bool)
        free[1 + d : 1 + d + len(formula.betas)] = powers
        formula = snapped(fit(formula, log_f, target_f, free), log_f, target_f)
        free[1 : 1 + d + len(formula.betas)] = False
        return fit(formula, log_x, target, free)

    # The product of powers: least squares in log space.
    solution = np.linalg.lstsq(
        np.column_stack([log_x, np.ones(len(log_x))]), target, rcond=None
    )[0]
    product = Formula(a=solution[:d], log_scale=float(solution[d]))
    candidates = [snapped(product, log_x, target)]

    def grow(formula, divisor_of, betas_of, add, powers=True):
        """The `TOP` best formulas of `formula` plus one screened term (the
        powers of their sums fitted too where `powers`, else as screened)."""
        base = formula.log_magnitude(log_s) - formula.log_scale - log_s @ formula.a
        divisor, betas = divisor_of(formula), betas_of(formula)
        grown = []
        for _, i, c, beta in screen(
            log_s, target_s, base, divisor, dictionary, betas, TOP
        ):
            new = add(formula, c, dictionary[i], beta)
            projected = np.linalg.lstsq(
                np.column_stack([log_s, np.ones(len(log_s))]),
                target_s - (new.log_magnitude(log_s) - new.log_scale - log_s @ new.a),
                rcond=None,
            )[0]
            new = dataclasses.replace(new, a=projected[:d], log_scale=projected[d])
            grown.append(fitted(new, powers))
        return grown

    def new_sum(formula, c, r, beta):
        return dataclasses.replace(
            formula, betas=[*formula.betas, beta], terms=[*formula.terms, [(c, r)]]
        )

    def to_first_sum(formula, c, r, beta):
        terms = [list(t) for t in formula.terms]
        terms[0].append((c, r))
        return dataclasses.replace(formula, terms=terms)

    ones = np.ones(len(log_s))
    # One term, its power fitted or as screened (a half: a stepping stone to
    # a sum of three terms, `sqrt(1 + a + b)`); the best of each kind with
    # distinct terms (r and its inverse alike) grow one more.
    seeds = []
    for powers in (True, False):
        first = grow(product, lambda f: ones, lambda f: BETAS, new_sum, powers)
        first.sort(key=lambda f: rms(f, log_x, target))
        candidates += first
        distinct = {}
        for formula in first:
            distinct.setdefault(tuple(np.abs(formula.terms[0][0][1])), formula)
        seeds += list(distinct.values())[: EXTEND if powers else EXTEND_AS_SCREENED]
    for formula in seeds:
        candidates += grow(formula, lambda f: ones, lambda f: BETAS, new_sum)
        candidates += grow(
            formula,
            lambda f: f.sums(log_s)[:, 0],
            lambda f: (f.betas[0],),
            to_first_sum,
        )

    def scored(formulas):
        found = []
        for formula in formulas:
            if not formula.finite:
                continue  # a fit that ran away (its constant beyond float64)
            formula = signed(formula, x, y)
            found.append((formula, relative_error(formula(x_held_out), y_held_out)))
        return found

    found = scored(candidates)
    found.sort(key=lambda f: f[1])
    found += scored(
        fitted(variant) for formula, _ in found[:PRUNE] for variant in pruned(formula)
    )
    best = min(error for _, error in found)
    chosen = min(
        ((f, error) for f, error in found if error <= max(best * SIMPLER, ROUNDOFF)),
        key=lambda pair: (pair[0].complexity, pair[1]),
    )[0]
    return chosen, found


def pruned(formula):
    """`formula` less one term of a sum of several: each of its terms, and
    its 1 (`1 + c r + c' r'` is then `c r (1 + (c'/c) r'/r)`, `c r` joining
    the outer unit)."""
    for k, terms in enumerate(formula.terms):
        if len(terms) < 2:
            continue
        beta = formula.betas[k]
        for j, (c, r) in enumerate(terms):
            rest = terms[:j] + terms[j + 1 :]
            yield dataclasses.replace(
                formula, terms=[*formula.terms[:k], rest, *formula.terms[k + 1 :]]
            )
            if c < 0 and beta != round(beta):
                continue  # (c r)^beta is not real
            moved = [(ci / c, ri - r) for ci, ri in rest]
            yield dataclasses.replace(
                formula,
                a=formula.a + beta * r,
                log_scale=formula.log_scale + beta * math.log(abs(c)),
                sign=formula.sign * (-1.0 if c < 0 and round(beta) % 2 else 1.0),
                terms=[*formula.terms[:k], moved, *formula.terms[k + 1 :]],
            )


def read(formula, names, x_held_out, y_held_out):
    """The formula as units, snapped and written: `(expression, snapped)`,
    the SymPy expression `keras_nalu.expressions` reads off the model after
    `keras_nalu.snap_weights` (the model as it is where that refuses it)."""
    model = formula.model()
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", UserWarning)  # no penalty schedule here
        try:
            model, _ = snap_weights(model, (x_held_out, y_held_out), rtol=SNAP_RTOL)
            exact = True
        except ValueError:
            exact = False
        expression = expressions(model, names, positive=True)[0]
    return expression, exact


# ---- The peers -----------------------------------------------------------------


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
    """The ReLU network of every seed, side by side: their extrapolation
    errors. `seeds_data` holds each seed's `(x, y, x_far, y_far)`."""
    keras.utils.set_random_seed(seed)
    x = np.stack([s[0] for s in seeds_data], axis=1)  # (N, seeds, D)
    y = np.stack([s[1] for s in seeds_data], axis=1)  # (N, seeds)
    mean, std = x.mean(axis=0), x.std(axis=0) + 1e-12
    y_mean, y_std = y.mean(axis=0), y.std(axis=0) + 1e-12
    seeds, d = x.shape[1:]
    h = DENSE["hidden"]
    inputs = keras.Input((seeds, d))
    z = keras.layers.EinsumDense("bsd,sdh->bsh", (seeds, h), bias_axes="sh",
                                 activation="relu")(inputs)  # fmt: skip
    z = keras.layers.EinsumDense("bsh,shk->bsk", (seeds, h), bias_axes="sk",
                                 activation="relu")(z)  # fmt: skip
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
    far = np.stack([s[2] for s in seeds_data], axis=1)
    y_far = np.stack([s[3] for s in seeds_data], axis=1)
    predicted = model.predict(((far - mean) / std).astype("float32"), verbose=0)
    y_hat = predicted.astype("float64") * y_std + y_mean
    return [median_relative_error(y_hat[:, i], y_far[:, i]) for i in range(seeds)]


# ---- One equation ----------------------------------------------------------------


def split(x, y):
    """`(x_fit, y_fit, x_held_out, y_held_out)`: the last `HELD_OUT` held out."""
    n = len(x) - int(round(HELD_OUT * len(x)))
    return x[:n], y[:n], x[n:], y[n:]


def ours(x, y, names, seed=0):
    """The recipe on `x -> y`: `{"expression", "exact", "formula", "seconds"}`
    (`exact`: `snap_weights` accepted the units)."""
    started = time.perf_counter()
    x_fit, y_fit, x_held, y_held = split(x, y)
    formula, _ = search(x_fit, y_fit, x_held, y_held, seed)
    expression, exact = read(formula, names, x_held, y_held)
    return {
        "expression": expression,
        "exact": exact,
        "formula": formula,
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


def run_equation(equation, seed, examples, noise, peers):
    """One equation, one seed: ours and gplearn's scores (a dict)."""
    x, y = equation.sample(examples, seed)
    if noise:
        y = task.noisy(y, seed, noise)
    x_far, y_far = equation.sample(EXTRAPOLATION_SIZE, seed, "extrapolation")
    found = ours(x, y, equation.variables, seed)
    expression = found["expression"]
    result = {
        "seed": seed,
        "ours": {
            "formula": text(expression),
            "recovered": bool(task.recovered(expression, equation)),
            "form": bool(task.recovered(expression, equation, rtol=task.FORM_RTOL)),
            "extrapolation": median_relative_error(
                evaluate(expression, equation.symbols, x_far), y_far
            ),
            "snapped": found["exact"],
            "seconds": found["seconds"],
        },
    }
    if "gplearn" in peers:
        x_fit, y_fit, _, _ = split(x, y)
        started = time.perf_counter()
        estimator, generations = gplearn_peer(
            x_fit, y_fit, found["seconds"], seed, gplearn_functions(equation.form)
        )
        seconds = time.perf_counter() - started
        try:
            program = gplearn_expression(estimator, equation.symbols)
            found_it = bool(task.recovered(program, equation))
            form = bool(task.recovered(program, equation, rtol=task.FORM_RTOL))
            shown = text(program)
        except Exception:  # noqa: BLE001 (any program SymPy cannot read or print)
            found_it, form, shown = False, False, str(estimator._program)
        result["gplearn"] = {
            "formula": shown,
            "recovered": found_it,
            "form": form,
            "extrapolation": median_relative_error(estimator.predict(x_far), y_far),
            "generations": generations,
            "seconds": seconds,
        }
    x_fit, y_fit, _, _ = split(x, y)
    return result, (x_fit, y_fit, x_far, y_far)


# ---- A user's data -------------------------------------------------------------


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


# ---- The experiment ----------------------------------------------------------------


class Feynman(Experiment):
    """The Feynman equations (Udrescu & Tegmark, 2020): formulas from data,
    beside gplearn."""

    arguments = {
        "seeds": 5,
        "examples": Shared(
            task.TRAIN_SIZE,
            help="training points per seed, a fifth of them held out "
            "(default %(default)s)",
        ),
    }
    record_path = "results/feynman.json"
    run_unit = "equation"

    def add_arguments(self, parser):
        parser.add_argument(
            "--equation",
            nargs="+",
            metavar="NAME",
            help="only these equations (e.g. I.12.2; default: every one of --forms)",
        )
        add_selection(parser, "--forms", task.FORMS, "the forms of the equations run")
        parser.add_argument(
            "--csv",
            type=input_file,
            metavar="PATH",
            help="your data instead: a CSV file with a header, columns the "
            "variables (positive), the last the target; the rows where a "
            "variable is above its 90th percentile are held back to check "
            "extrapolation",
        )
        parser.add_argument(
            "--noise",
            type=non_negative_float,
            default=0.0,
            help="Gaussian noise on the targets, times their RMS (e.g. 0.01; "
            "default %(default)s)",
        )
        add_selection(parser, "--peers", PEERS, "the peers run beside ours", empty=True)

    def check_arguments(self, args, parser):
        known = {e.name for e in task.equations()}
        for name in args.equation or ():
            if name not in known:
                parser.error(
                    f"--equation: expected names of the Feynman table, e.g. "
                    f"I.12.2, got {name!r}"
                )

    def prepare(self, args, session):
        if args.csv is not None:
            self.chosen = []
            return
        self.chosen = [
            e
            for e in task.equations()
            if (args.equation is None and e.form in args.forms)
            or (args.equation is not None and e.name in args.equation)
        ]
        print(
            f"{len(self.chosen)} equations x {args.seeds} seeds, "
            f"{args.examples} training points each"
            + (f", noise {args.noise:g}" if args.noise else "")
        )

    def runs(self, args):
        if args.csv is not None:
            return [("csv",)]
        return [(e.name,) for e in self.chosen]

    def train(self, args, run, session):
        if args.csv is not None:
            return self.user_data(args)
        equation = task.equation(run[0])
        row = {
            "equation": equation.name,
            "form": equation.form,
            "formula": str(equation.expression),
            "seeds": [],
        }
        data = []
        for seed in range(args.seeds):
            result, seed_data = run_equation(
                equation, seed, args.examples, args.noise, args.peers
            )
            row["seeds"].append(result)
            data.append(seed_data)
        if "dense" in args.peers:
            started = time.perf_counter()
            row["dense"] = {
                "extrapolation": dense_peer(data, seed=0),
                "seconds": time.perf_counter() - started,
            }
        if args.equation is not None:
            self.describe(row)
        return row

    def describe(self, row):
        """Prints what one equation found, seed by seed."""
        print(f"\n{row['equation']} ({row['form']}): y = {row['formula']}")
        for result in row["seeds"]:
            found = result["ours"]
            print(
                f"  seed {result['seed']}: y = {found['formula']}  "
                f"({'recovered' if found['recovered'] else 'not recovered'}; "
                f"extrapolation error {found['extrapolation']:.1e}, "
                f"{found['seconds']:.1f} s)"
            )

    def user_data(self, args):
        names, x, y = read_csv(args.csv)
        far = far_rows(x)
        found = ours(x[~far], y[~far], names)
        y_hat = evaluate(found["expression"], task.symbols(names), x[far])
        error = median_relative_error(y_hat, y[far])
        print(f"\ny = {text(found['expression'])}")
        print(
            f"extrapolation check: median relative error {error:.1e} on the "
            f"{int(far.sum())} rows where a variable is above its 90th "
            f"percentile (fitted on the other {int((~far).sum())}, "
            f"{found['seconds']:.1f} s)"
        )
        return {
            "csv": str(args.csv),
            "formula": text(found["expression"]),
            "extrapolation": error,
            "seconds": found["seconds"],
        }

    def run_name(self, run, row):
        return run[0]

    def progress(self, row):
        if "seeds" not in row:
            return {}
        return {
            "ours": sum(s["ours"]["recovered"] for s in row["seeds"]),
            "gplearn": sum(
                s.get("gplearn", {}).get("recovered", 0) for s in row["seeds"]
            ),
        }

    def report(self, args, rows):
        if args.csv is not None or not rows:
            return
        print()
        print("\n".join(markdown_table(*counts_table(rows, args.seeds))))
        print(f"\nIn {self.elapsed():.0f} s.")

    def record(self, args, rows):
        if args.csv is not None:
            return {}
        return {
            "counts": counts(rows, args.seeds),
            "recovered_yet_far": recovered_yet_far(rows),
            "recipe": {
                "held_out": HELD_OUT,
                "screen_size": SCREEN_SIZE,
                "top": TOP,
                "extend": EXTEND,
                "betas": BETAS,
                "snap_rtol": SNAP_RTOL,
                "recovery_rtol": task.RECOVERY_RTOL,
                "extrapolated_below": EXTRAPOLATED,
            },
            "dense": DENSE,
        }

    def plot(self, args, rows, plt):
        if args.csv is not None or not rows:
            return None
        return figure(rows, plt)


# ---- Tables and figure (the page's too: nalu_research.records.feynman) ----------


def majority(flags):
    flags = [bool(f) for f in flags]
    return sum(flags) * 2 > len(flags)


def counts(rows, seeds):
    """`{form: {"equations", "ours", "gplearn"}}`: equations recovered on a
    majority of the seeds, by form, and in all."""
    found = {}
    for form in (*task.FORMS, "all"):
        chosen = [r for r in rows if form in ("all", r["form"])]
        if not chosen:
            continue
        found[form] = {"equations": len(chosen)}
        for who in ("ours", "gplearn"):
            if all(who in s for r in chosen for s in r["seeds"]):
                found[form][who] = sum(
                    majority(s[who]["recovered"] for s in r["seeds"]) for r in chosen
                )
                # A formula recovered has its form (constants within 1e-2) too.
                found[form][f"{who}_form"] = sum(
                    majority(
                        s[who]["recovered"] or s[who].get("form", False)
                        for s in r["seeds"]
                    )
                    for r in chosen
                )
                found[form][f"{who}_extrapolated"] = sum(
                    median(s[who]["extrapolation"] for s in r["seeds"]) < EXTRAPOLATED
                    for r in chosen
                )
        if all("dense" in r for r in chosen):
            found[form]["dense_extrapolated"] = sum(
                median(r["dense"]["extrapolation"]) < EXTRAPOLATED for r in chosen
            )
    return found


def recovered_yet_far(rows):
    """`[(equation, seed), ...]` recovered by ours but extrapolating no better
    than `EXTRAPOLATED`: none, if recovering a formula means what it says."""
    return [
        (r["equation"], s["seed"])
        for r in rows
        for s in r["seeds"]
        if s["ours"]["recovered"] and not s["ours"]["extrapolation"] < EXTRAPOLATED
    ]


def counts_table(rows, seeds):
    """Equations recovered on a majority of `seeds` seeds, by form: exactly
    (constants within 1e-4) and their form (constants within 1e-2); and
    those whose median extrapolation error is below `EXTRAPOLATED`."""
    found = counts(rows, seeds)
    header = ["form", "equations", "ours", "gplearn", "ours: form", "gplearn: form",
              "ours < 1e-5", "gplearn < 1e-5", "ReLU < 1e-5"]  # fmt: skip
    keys = ("ours", "gplearn", "ours_form", "gplearn_form", "ours_extrapolated",
            "gplearn_extrapolated", "dense_extrapolated")  # fmt: skip
    lines = [
        [form, c["equations"], *(c.get(key, "-") for key in keys)]
        for form, c in found.items()
    ]
    return header, lines


def median(values):
    values = [v for v in values if v is not None]
    return float(np.median(values)) if values else math.nan


def shorter(formula, size=90):
    """`formula`, cut to `size` characters (a failed search's can be long)."""
    return formula if len(formula) <= size else formula[: size - 4] + " ..."


def equations_table(rows):
    """One line per equation: its formula, ours and gplearn's recovered
    seeds, a formula found and the median extrapolation errors."""
    header = [
        "equation",
        "form",
        "formula",
        "ours",
        "a formula ours found",
        "ours: error",
        "gplearn",
        "gplearn: error",
        "ReLU: error",
    ]
    lines = []
    for row in rows:
        seeds = row["seeds"]
        ours_found = [s["ours"] for s in seeds]
        shown = next((f for f in ours_found if f["recovered"]), ours_found[0])
        gp = [s["gplearn"] for s in seeds if "gplearn" in s]
        dense = row.get("dense", {}).get("extrapolation", [])
        lines.append(
            [
                row["equation"],
                row["form"],
                f"`{row['formula']}`",
                f"{sum(f['recovered'] for f in ours_found)}/{len(seeds)}",
                f"`{shorter(shown['formula'])}`",
                f"{median(f['extrapolation'] for f in ours_found):.0e}",
                f"{sum(g['recovered'] for g in gp)}/{len(gp)}" if gp else "-",
                f"{median(g['extrapolation'] for g in gp):.0e}" if gp else "-",
                f"{median(dense):.0e}" if dense else "-",
            ]
        )
    return header, lines


def figure(rows, plt):
    """Median extrapolation error per equation: ours, gplearn, ReLU."""
    fig, ax = plt.subplots(figsize=(10, 3.6), dpi=90)
    index = np.arange(len(rows))
    floor = 1e-17
    for who, marker, colour in (("ours", "o", "C0"), ("gplearn", "s", "C1")):
        values = [
            median(s[who]["extrapolation"] for s in r["seeds"] if who in s)
            for r in rows
        ]
        if not all(math.isnan(v) for v in values):
            ax.scatter(index, np.maximum(values, floor), s=14, marker=marker,
                       color=colour, label=who)  # fmt: skip
    dense = [median(r.get("dense", {}).get("extrapolation", [])) for r in rows]
    if not all(math.isnan(v) for v in dense):
        ax.scatter(index, np.maximum(dense, floor), s=10, marker="x", color="C2",
                   label="ReLU network")  # fmt: skip
    ax.axhline(EXTRAPOLATED, color="grey", linewidth=0.8, linestyle="--")
    ax.set_yscale("log")
    ax.set_ylabel("median relative error,\nextrapolation")
    starts = [
        i for i, r in enumerate(rows) if i == 0 or r["form"] != rows[i - 1]["form"]
    ]
    ax.set_xticks(index[::5])
    ax.set_xlabel("equation (in the table's order)")
    for i in starts:
        ax.axvline(i - 0.5, color="lightgrey", linewidth=0.6)
    ax.legend(loc="upper left", fontsize=8, ncol=3)
    fig.tight_layout()
    return fig


def main(argv=None):
    return Feynman().main(argv)
