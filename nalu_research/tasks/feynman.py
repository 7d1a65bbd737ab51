"""The Feynman equations of Udrescu & Tegmark (2020) as regression tasks.

The table (`nalu_research/data/feynman_equations.csv`, from "AI Feynman: a
physics-inspired method for symbolic regression", Science Advances 6, 2020,
as published with their dataset) gives 100 equations of the Feynman Lectures
on Physics, each with its variables and the range each is sampled from. The
data are generated here from it:

- **Training:** `TRAIN_SIZE` (10,000) points, each variable drawn from
  U[low, high], its range in the table.
- **Extrapolation:** each variable drawn from U[high, 2 * high], beyond the
  whole training box; only points where the formula is real and finite are
  kept (drawn again until there are enough).
- **Noise:** the 1% variant adds Gaussian noise of standard deviation
  `0.01 * sqrt(mean(y ** 2))` to the targets (SRBench's convention, La Cava
  et al., 2021); the inputs stay exact.

Every draw is seeded by `(seed, equation number, region)`, so one equation's
data do not depend on which others are drawn.

Each formula is read with SymPy, every variable a positive real symbol (all
ranges are positive): names SymPy knows otherwise (`gamma`, `beta`, `I`,
`E_n`, ...) are the variables here, `pi` is the number, `ln` the logarithm and
`arcsin` SymPy's `asin`. By its form (`form`), read in this order: an
equation with a function (`exp`, `log`, `sin`, `cos`, `tanh`, `asin`) is
`"transcendental"`; one product of powers of the variables times a constant
is a `"product"`; one whose expansion is a sum of such products a `"sum"`;
one that raises a sum to a power other than an integer (a root of a sum) a
`"root"`; any other is a `"rational"` function. The counts are 38, 7, 14, 12
and 29 (`FORM_COUNTS`, tested).

Example:

>>> from nalu_research.tasks.feynman import equation
>>> coulomb = equation("I.12.2")
>>> coulomb.expression, coulomb.form
(q1*q2/(4*pi*epsilon*r**2), 'product')
>>> x, y = coulomb.sample(3, seed=0)
>>> x.shape, y.shape
((3, 4), (3,))
"""

import csv
import dataclasses
import functools
import math
from fractions import Fraction
from pathlib import Path

import numpy as np

TABLE = Path(__file__).resolve().parents[1] / "data" / "feynman_equations.csv"
FORMS = ("product", "sum", "rational", "root", "transcendental")
# How many equations of each form the table holds.
FORM_COUNTS = {
    "product": 38,
    "sum": 7,
    "rational": 14,
    "root": 12,
    "transcendental": 29,
}
TRAIN_SIZE = 10_000
NOISE = 0.01
REGIONS = ("train", "extrapolation")
# Rounds of drawing before a region is declared to hold too few real points.
MAX_DRAWS = 50
# A constant is read as a simple number (`read_constant`) within READ_RTOL,
# and an equation counts as recovered when its constants are within
# RECOVERY_RTOL of the true ones (`recovered`).
READ_RTOL = 1e-6
RECOVERY_RTOL = 1e-4
# Its form found: the same with constants within 1% (a noisy target's).
FORM_RTOL = 1e-2
MAX_DENOMINATOR = 36
MAX_NUMERATOR = 64
# A recovered formula must agree with the true one to this relative error
# on every point checked (float64), before SymPy is asked to prove it.
IDENTICAL = 1e-9


@dataclasses.dataclass(frozen=True)
class Equation:
    """One equation of the table.

    Attributes:
        name: Its file name in the table, e.g. `"I.12.2"`.
        number: Its number in the table (1 to 100).
        output: The name of the quantity it computes.
        formula: The formula as the table writes it.
        variables: The variables' names, in the table's order (the columns
            of `x`).
        ranges: Each variable's `(low, high)`.
    """

    name: str
    number: int
    output: str
    formula: str
    variables: tuple[str, ...]
    ranges: tuple[tuple[float, float], ...]

    @property
    def symbols(self):
        """The variables as SymPy symbols (positive reals), in order."""
        return symbols(self.variables)

    @property
    def expression(self):
        """The formula as a SymPy expression of `symbols`."""
        return parse(self.formula, self.variables)

    @property
    def form(self):
        """Its form, one of `FORMS` (see the module)."""
        return form(self.expression)

    def __call__(self, x):
        """The formula on inputs `x` `(n, len(variables))`, in float64; NaN
        where it is not real."""
        function = _lambdified(self.formula, self.variables)
        x = np.asarray(x, dtype="float64")
        with np.errstate(all="ignore"):
            y = function(*x.T)
        return np.broadcast_to(np.asarray(y, dtype="float64"), x.shape[:1]).copy()

    def region(self, region):
        """`(low, high)` arrays of `region`: `"train"` is the table's range,
        `"extrapolation"` U[high, 2 * high]."""
        low, high = np.array(self.ranges, dtype="float64").T
        if region == "train":
            return low, high
        if region == "extrapolation":
            return high, 2 * high
        raise ValueError(
            f"Received an invalid value for `region`, expected one of {REGIONS}. "
            f"Received: region={region!r}"
        )

    def sample(self, n, seed, region="train"):
        """`(x, y)`: `n` points of `region` where the formula is real and
        finite, `x` `(n, len(variables))` and `y` `(n,)` in float64.

        Raises:
            ValueError: If `MAX_DRAWS` rounds of `n` draws hold fewer than
                `n` such points.
        """
        low, high = self.region(region)
        rng = np.random.default_rng([seed, self.number, REGIONS.index(region)])
        xs, ys, found = [], [], 0
        for _ in range(MAX_DRAWS):
            x = rng.uniform(low, high, size=(n, len(low)))
            y = self(x)
            keep = np.isfinite(y)
            xs.append(x[keep])
            ys.append(y[keep])
            found += int(keep.sum())
            if found >= n:
                return np.concatenate(xs)[:n], np.concatenate(ys)[:n]
        raise ValueError(
            f"{self.name}: {MAX_DRAWS} rounds of {n} draws from {region} gave "
            f"only {found} points where {self.formula} is real and finite."
        )


def noisy(y, seed, level=NOISE):
    """`y` plus Gaussian noise of standard deviation `level * rms(y)`."""
    rng = np.random.default_rng([seed, 1_000_003])
    scale = level * np.sqrt(np.mean(np.square(y)))
    return y + scale * rng.standard_normal(np.shape(y))


@functools.cache
def equations():
    """Every equation of the table, in its order (a tuple of `Equation`)."""
    with TABLE.open(newline="") as file:
        rows = list(csv.DictReader(file))
    found = []
    for row in rows:
        size = int(row["# variables"])
        found.append(
            Equation(
                name=row["Filename"],
                number=int(row["Number"]),
                output=row["Output"],
                formula=row["Formula"],
                variables=tuple(row[f"v{i}_name"] for i in range(1, size + 1)),
                ranges=tuple(
                    (float(row[f"v{i}_low"]), float(row[f"v{i}_high"]))
                    for i in range(1, size + 1)
                ),
            )
        )
    return tuple(found)


def equation(name):
    """The equation of the table named `name` (e.g. `"I.12.2"`)."""
    for found in equations():
        if found.name == name:
            return found
    raise ValueError(
        "Received an invalid value for `name`, expected an equation of the "
        f"Feynman table, e.g. 'I.12.2'. Received: name={name!r}"
    )


def symbols(names):
    """`names` as positive real SymPy symbols."""
    import sympy

    return [sympy.Symbol(name, positive=True) for name in names]


@functools.cache
def parse(formula, variables):
    """`formula` (the table's text) as a SymPy expression of `variables`.

    Every variable is a positive real symbol, whatever SymPy calls that name
    otherwise (`gamma`, `beta`, `I`, `E_n`); `pi` is the number, `ln` and
    `arcsin` are `log` and `asin`. Any other name is an error, not a new
    symbol.
    """
    import sympy
    from sympy.parsing.sympy_parser import parse_expr, standard_transformations

    functions = {
        "exp": sympy.exp,
        "sqrt": sympy.sqrt,
        "sin": sympy.sin,
        "cos": sympy.cos,
        "tanh": sympy.tanh,
        "arcsin": sympy.asin,
        "ln": sympy.log,
        "log": sympy.log,
        "pi": sympy.pi,
    }
    local = {**functions, **dict(zip(variables, symbols(variables), strict=True))}
    expression = parse_expr(
        formula, local_dict=local, transformations=standard_transformations
    )
    unknown = expression.free_symbols - set(local.values())
    if unknown:
        raise ValueError(
            f"Received a formula with names that are not its variables "
            f"{variables}: {sorted(map(str, unknown))}. Received: {formula!r}"
        )
    return expression


def is_monomial(expression):
    """Whether `expression` is one product of powers of symbols (any real
    exponents) times a constant."""
    import sympy

    for factor in sympy.Mul.make_args(expression):
        if not factor.free_symbols:
            continue
        base, exponent = factor.as_base_exp()
        if not (base.is_Symbol and exponent.is_number):
            return False
    return True


def form(expression):
    """The form of `expression`, one of `FORMS` (see the module)."""
    import sympy

    if expression.atoms(sympy.Function):
        return "transcendental"
    if is_monomial(expression):
        return "product"
    expanded = sympy.expand(expression)
    if isinstance(expanded, sympy.Add) and all(
        is_monomial(term) for term in expanded.args
    ):
        return "sum"
    for power in expression.atoms(sympy.Pow):
        if not power.exp.is_Integer and not power.base.is_Symbol:
            return "root"
    return "rational"


@functools.cache
def _lambdified(formula, variables):
    import sympy

    return sympy.lambdify(symbols(variables), parse(formula, variables), "numpy")


def read_constant(value, rtol=READ_RTOL):
    """`value` as a simple number, `+-(p/q) * sqrt(2)^j * pi^(k/2)` with
    `p <= MAX_NUMERATOR`, `q <= MAX_DENOMINATOR`, `j` in -1, 0, 1 and `k`
    from -4 to 4, within relative `rtol`, or None where none is that close.

    Of the numbers within `rtol`, the simplest (smallest `p + q + |j| +
    |k|`) wins, then the nearest. The numbers of the Feynman equations are
    of this kind: `1/2`, `3/5`, `1/(4*pi)`, `1/sqrt(2*pi)`.

    >>> read_constant(0.3989422804)
    sqrt(2)/(2*sqrt(pi))
    >>> read_constant(-0.0795774715), read_constant(0.123456) is None
    (-1/(4*pi), True)
    """
    import sympy

    value = float(value)
    if value == 0:
        return sympy.Integer(0)
    if not math.isfinite(value):
        return None
    size = abs(value)
    best = None
    for j in (0, -1, 1):
        for k in (0, -2, 2, -1, 1, -4, 4, -3, 3):
            scale = math.sqrt(2) ** j * math.pi ** (k / 2)
            near = Fraction(size / scale).limit_denominator(MAX_DENOMINATOR)
            if near == 0 or near.numerator > MAX_NUMERATOR:
                continue
            error = abs(float(near) * scale - size) / size
            if error > rtol:
                continue
            key = (near.numerator + near.denominator + abs(j) + abs(k), error)
            if best is None or key < best[0]:
                best = (key, near, j, k)
    if best is None:
        return None
    _, near, j, k = best
    number = (
        sympy.Rational(near.numerator, near.denominator)
        * sympy.sqrt(2) ** j
        * sympy.pi ** sympy.Rational(k, 2)
    )
    return number if value > 0 else -number


def read_constants(expression, rtol=READ_RTOL):
    """`expression` with each floating-point number replaced by its reading
    (`read_constant`) where it has one within `rtol`."""
    import sympy

    readings = {}
    for number in expression.atoms(sympy.Float):
        read = read_constant(float(number), rtol)
        if read is not None:
            readings[number] = read
    return expression.xreplace(readings)


def recovered(found, equation, x=None, rtol=RECOVERY_RTOL):
    """Whether the SymPy expression `found` (of `equation.symbols`) is the
    equation's formula up to constants within `rtol` (default
    `RECOVERY_RTOL`, 1e-4; `FORM_RTOL`, 1e-2, asks for its form only).

    Precisely: every floating-point number of `found` is read as a simple
    number within `rtol` (`read_constant`; one that has no reading fails),
    and the result minus the true formula simplifies, in SymPy, to 0. The
    exponents of `found` are exact already (a snapped model's). A numerical
    check on `x` (default: 200 points of the training range and
    200 of the extrapolation range) comes first: a formula off by more than
    `IDENTICAL` there is not the equation, and SymPy is not asked.
    """
    import sympy

    numbers = found.atoms(sympy.Float)
    # A constant readable within RECOVERY_RTOL keeps that reading at a
    # looser `rtol` (3/(20*pi) is not 1/21 because 1e-2 allows both).
    readings = {
        n: read_constant(float(n), min(rtol, RECOVERY_RTOL))
        or read_constant(float(n), rtol)
        for n in numbers
    }
    if any(read is None for read in readings.values()):
        return False
    candidate = found.xreplace(readings)
    if candidate.free_symbols - set(equation.symbols) or candidate.has(
        sympy.zoo, sympy.oo, -sympy.oo, sympy.nan
    ):
        return False
    if x is None:
        x = np.concatenate(
            [equation.sample(200, seed=7, region=region)[0] for region in REGIONS]
        )
    truth = equation(x)
    with np.errstate(all="ignore"):
        values = sympy.lambdify(equation.symbols, candidate, "numpy")(*x.T)
    values = np.broadcast_to(np.asarray(values, dtype="complex128"), truth.shape)
    if not np.all(np.abs(values - truth) <= IDENTICAL * np.abs(truth)):
        return False
    difference = sympy.simplify(candidate - equation.expression)
    return difference == 0 or sympy.simplify(candidate / equation.expression) == 1
