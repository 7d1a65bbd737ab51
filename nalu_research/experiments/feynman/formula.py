"""The formulas the recipe searches (`Formula`), in NumPy and as units: a
`nalu_research.layers.ScaledPower` (a power unit with a constant) over the
inputs and a `keras_nalu.NAU` that adds the terms of another: products of
powers, sums, rational functions and roots of sums are all one model."""

import dataclasses
import math
import warnings

import numpy as np

# The largest |log C| of a formula: C stays within float64's range.
LARGEST_LOG = 700.0
# The largest held-out error `snap_weights` accepts (relative).
SNAP_RTOL = 1e-6


def log_abs(values):
    """`log|values|`, `log(1e-300)` at 0 (float64)."""
    with np.errstate(all="ignore"):
        return np.log(np.maximum(np.abs(values), 1e-300))


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
        log_s = log_abs(self.sums(log_x))
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
        columns = [np.ones(len(log_x)), *log_x.T, *log_abs(s).T]
        for k, terms in enumerate(self.terms):
            for _, r in terms:
                columns.append(self.betas[k] * np.exp(log_x @ r) / s[:, k])
        return np.stack(columns, axis=1)

    def model(self):
        """The formula as units: `ScaledPower` over `[x, NAU(ScaledPower(x))]`
        (only the outer unit for a product of powers), in float64."""
        import keras

        from keras_nalu import NAU
        from nalu_research.layers import ScaledPower

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


def read(formula, names, x_held_out, y_held_out):
    """The formula as units, snapped and written: `(expression, snapped)`,
    the SymPy expression `keras_nalu.expressions` reads off the model after
    `keras_nalu.snap_weights` (the model as it is where that refuses it)."""
    from keras_nalu import expressions, snap_weights

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
