"""The recipe: one search for every equation, chosen before any equation's
answer was looked at, for a `Formula`'s weights.

In log space the outer unit is linear: `log|y| = log|C| + sum_i a_i log x_i
+ sum_k b_k log|S_k|`. A product of powers is therefore an ordinary
least-squares fit (convex: the fit finds it whenever it exists). A sum's
exponents `r_km` are discrete choices, which gradient descent from random
starts did not find in development (Adam over 64 restarts: the right
structure in a handful at best); so they are searched: every monomial of one
to three inputs with exponents in {-2, -1, 1, 2} and of four inputs with
exponents +-1 (`monomials`) is tried as the term `c x^r` of a new sum
`S = 1 + c x^r`, with `c` on a grid and the power `b` among `BETAS`, the
outer unit solved in closed form for each (variable projection), on
`SCREEN_SIZE` training points. The `TOP` best are fitted by
Levenberg-Marquardt on all the fitting points (every constant and exponent
of the outer unit, `c` and `b`), their exponents rounded to halves (kept
only where the fitting error does not get worse) and the constants fitted
again, in float64. From the `EXTEND` best, one more term is searched the
same way, either a second sum or a second term of the first. Among all of
these and the product of powers, the simplest whose held-out error is within
10% of the best is the answer (`search`).
"""

import dataclasses
import itertools
import math

import numpy as np

from nalu_research.experiments.feynman.formula import Formula, log_abs

# The powers a sum may be raised to.
BETAS = (-2.0, -1.5, -1.0, -0.5, 0.5, 1.0, 1.5, 2.0)
# The points each candidate term is screened on, the grid of its constant
# (times the term's median size), how many screened candidates are fitted,
# how many fitted ones are extended by one more term.
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
# A simpler formula wins when its held-out error is within this factor of
# the best's, or below ROUNDOFF (float64's: a relative error of 1e-10).
SIMPLER = 1.1
ROUNDOFF = 1e-20


def monomials(d):
    """The exponent vectors a term may have, `(n, d)`: one to three inputs
    with exponents in {-2, -1, 1, 2}, four with exponents +-1."""
    found = []
    for size in (1, 2, 3, 4):
        values = (-2, -1, 1, 2) if size < 4 else (-1, 1)
        for places in itertools.combinations(range(d), size):
            for powers in itertools.product(values, repeat=size):
                r = np.zeros(d)
                r[list(places)] = powers
                found.append(r)
    return np.array(found).reshape(-1, d)


def outer_unit(log_x, z):
    """The outer unit's free part, `(a, log|C|)`, fitting `z` by least
    squares."""
    design = np.column_stack([log_x, np.ones(len(log_x))])
    solution = np.linalg.lstsq(design, z, rcond=None)[0]
    return solution[:-1], float(solution[-1])


def screen(log_x, target, base, divisor, dictionary, betas, keep):
    """The `keep` best terms `c x^r` to add: `(error, r index, c, beta)`.

    The formula's log-magnitude is `base` (its fixed part) plus, for a term
    `c x^r`, `beta * log|1 + c x^r / divisor|` (`divisor` 1 for a new sum;
    a sum's value to add the term to it, `betas` then its power alone), and
    the outer unit's free part, `[log x, 1]`, solved by least squares.
    """
    q, _ = np.linalg.qr(np.column_stack([log_x, np.ones(len(log_x))]))
    z = target - base
    z = z - q @ (q.T @ z)
    ratio = np.exp(np.clip(log_x @ dictionary.T, -300, 300)) / divisor[:, None]
    size = np.median(np.abs(ratio), axis=0)
    betas = np.asarray(betas)
    found = []
    for g in GRID:
        c = g / size
        with np.errstate(all="ignore"):
            column = log_abs(1 + c * ratio)
        column = column - q @ (q.T @ column)
        zl = z @ column
        ll = np.sum(column * column, axis=0)
        # |z - beta l|^2 for each beta, the best of them per term.
        errors = z @ z - 2 * betas[:, None] * zl + betas[:, None] ** 2 * ll
        best = np.argmin(errors, axis=0)
        error = errors[best, np.arange(len(best))]
        for i in np.argsort(error)[:keep]:
            found.append((float(error[i]), int(i), float(c[i]), float(betas[best[i]])))
    unique = {}  # one candidate per term and power
    for candidate in sorted(found, key=lambda f: f[0]):
        unique.setdefault((candidate[1], candidate[3]), candidate)
    return list(unique.values())[:keep]


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
    product = Formula(*outer_unit(log_x, target))
    candidates = [snapped(product, log_x, target)]

    def sums_part(formula):  # its log-magnitude on `log_s` less the outer's
        return formula.log_magnitude(log_s) - formula.log_scale - log_s @ formula.a

    def grow(formula, first_sum=False, powers=True):
        """The `TOP` best formulas of `formula` plus one screened term, in a
        new sum or its first (the powers of their sums fitted too where
        `powers`, else as screened)."""
        if first_sum:
            divisor, betas = formula.sums(log_s)[:, 0], (formula.betas[0],)
        else:
            divisor, betas = np.ones(len(log_s)), BETAS
        grown = []
        for _, i, c, beta in screen(
            log_s, target_s, sums_part(formula), divisor, dictionary, betas, TOP
        ):
            term, terms, sum_powers = (c, dictionary[i]), formula.terms, formula.betas
            if first_sum:
                terms = [[*terms[0], term], *terms[1:]]
            else:
                terms, sum_powers = [*terms, [term]], [*sum_powers, beta]
            new = dataclasses.replace(formula, betas=sum_powers, terms=terms)
            a, log_scale = outer_unit(log_s, target_s - sums_part(new))
            new = dataclasses.replace(new, a=a, log_scale=log_scale)
            grown.append(fitted(new, powers))
        return grown

    # One term, its power fitted or as screened (a half: a stepping stone to
    # a sum of three terms, `sqrt(1 + a + b)`); the best of each kind with
    # distinct terms (r and its inverse alike) grow one more.
    seeds = []
    for powers in (True, False):
        first = grow(product, powers=powers)
        first.sort(key=lambda f: rms(f, log_x, target))
        candidates += first
        distinct = {}
        for formula in first:
            distinct.setdefault(tuple(np.abs(formula.terms[0][0][1])), formula)
        seeds += list(distinct.values())[: EXTEND if powers else EXTEND_AS_SCREENED]
    for formula in seeds:
        candidates += grow(formula) + grow(formula, first_sum=True)

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
