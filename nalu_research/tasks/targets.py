"""The targets of the static task: expressions of the sums `a` and `b`,
parsed by SymPy (`parse`, behind `static_arithmetic.parse_target`) and
computed with NumPy or, in the compiled graph, `keras.ops`.

Apart from `nalu_research.tasks.static_arithmetic` because it imports SymPy
(about 0.3 s): the task's module, which every command line imports, loads
this one on its first parse. Keras is imported on a target's first
`Target.keras` call, and `keras_nalu.validation` only for an error.
"""

import functools

import numpy as np
import sympy
from sympy.parsing.sympy_parser import (
    convert_xor,
    parse_expr,
    standard_transformations,
)
from sympy.printing.lambdarepr import LambdaPrinter

from nalu_research.tasks.static_arithmetic import SYMBOLS, TARGETS

_A, _B = sympy.symbols("a b")
# The functions a target may apply, as SymPy parses them. The graph computes
# each with the function of `keras.ops` of its name in lower case, but `sqrt`
# (`_keras_names`).
_FUNCTIONS = {
    "sqrt": sympy.sqrt,
    "exp": sympy.exp,
    "log": sympy.log,
    "Abs": sympy.Abs,
    "sin": sympy.sin,
    "cos": sympy.cos,
    "tanh": sympy.tanh,
}
_CONSTANTS = {"pi": sympy.pi, "E": sympy.E}
# What the text of a target may name: a, b, the functions and constants, and
# the classes SymPy's parser writes numbers and names with. No Python
# builtins: `parse_expr` evaluates the text as Python.
# fmt: off
_NAMES = {
    **_FUNCTIONS,
    **_CONSTANTS,
    "abs": sympy.Abs,
    **{name: getattr(sympy, name)
       for name in ("Integer", "Float", "Rational", "Symbol", "Function")},
    "__builtins__": {},
}
# fmt: on


def _keras_names():
    """The functions and constants of `_FUNCTIONS` and `_CONSTANTS` as the
    graph computes them. `sqrt` is `x ** 0.5`, the graph's square root before
    targets were expressions, so that a run's batches are those of earlier
    versions to the bit."""
    from keras import ops

    return {
        **{name: getattr(ops, name.lower()) for name in _FUNCTIONS},
        "sqrt": lambda x: x**0.5,
        **{name: float(value) for name, value in _CONSTANTS.items()},
    }


class _KerasPrinter(LambdaPrinter):
    """SymPy's printer of lambdified Python, with a square written `(x*x)`:
    the graph's square before targets were expressions (eager TensorFlow's
    `x**2` rounds otherwise)."""

    def _print_Pow(self, expr, rational=False):
        if expr.exp == 2:
            base = self.parenthesize(expr.base, 100)  # always in brackets
            return f"({base}*{base})"
        return super()._print_Pow(expr, rational=rational)


_EXPECTED = (
    f"a name of {tuple(TARGETS)} or an expression of the inputs a and b "
    "(e.g. '2*a - b', 'a**2*b', 'sqrt(a)/b')"
)


class Target:
    """A target of the static task: an expression of the sums `a` and `b`.

    Built by `nalu_research.tasks.static_arithmetic.parse_target`, which
    parses the text with SymPy once per text.

    Attributes:
        name: The target's name in records and tables: the key of `TARGETS`
            when the expression is one of the paper's operations (`"a * b"`
            is `"mul"`), else SymPy's text of the expression (`"2*a - b"`).
        symbol: How tables write it: `SYMBOLS`' `"a*b"`, or the expression.
        expression: The SymPy expression, of the symbols `a` and `b`.
    """

    def __init__(self, name, expression):
        self.name = name
        self.expression = expression
        self.symbol = SYMBOLS.get(name, name)
        self._numpy = sympy.lambdify((_A, _B), expression, modules="numpy")

    def numpy(self, a, b):
        """The target of NumPy arrays `a` and `b`, of their shape (float64 in,
        float64 out): for test sets and thresholds."""
        value = np.asarray(self._numpy(a, b))
        shape = np.broadcast_shapes(np.shape(a), np.shape(b))
        return value if value.shape == shape else np.broadcast_to(value, shape).copy()

    @functools.cached_property
    def _keras(self):
        return sympy.lambdify(
            (_A, _B), self.expression, modules=[_keras_names()], printer=_KerasPrinter
        )

    def keras(self, a, b):
        """The target of tensors `a` and `b` (`keras.ops`, in the compiled
        graph), of `a`'s shape and dtype."""
        from keras import ops

        value = self._keras(a, b)
        if not hasattr(value, "shape") or tuple(value.shape) != tuple(a.shape):
            value = ops.broadcast_to(ops.cast(value, a.dtype), ops.shape(a))
        return value

    def __repr__(self):
        return f"Target({self.name!r})"


def parse(value, name="target"):
    """`nalu_research.tasks.static_arithmetic.parse_target`."""
    if isinstance(value, Target):
        return value
    if not isinstance(value, str):
        raise _invalid(name, _EXPECTED, value)
    try:
        return _parsed(value)
    except ValueError as error:  # `_parsed`'s words
        raise _invalid(name, error.expected, value) from None


def _invalid(name, expected, value):
    from keras_nalu import validation  # it imports Keras: only for an error

    return validation.invalid(name, expected, value)


@functools.cache
def _parsed(text):
    text = TARGETS.get(text, text)
    try:
        expression = _sympy(text)
    except Exception as error:  # SymPy raises what Python's eval raises
        raise _invalid(
            "target", f"{_EXPECTED}; it does not parse ({error})", text
        ) from None
    if not isinstance(expression, sympy.Expr):
        raise _invalid(
            "target", f"{_EXPECTED}; it is a {type(expression).__name__}", text
        )
    unknown = sorted(str(s) for s in expression.free_symbols - {_A, _B})
    if unknown:
        raise _invalid(
            "target",
            f"an expression of the inputs a and b only; it uses {', '.join(unknown)}",
            text,
        )
    functions = sorted(
        {type(f).__name__ for f in expression.atoms(sympy.Function)} - set(_FUNCTIONS)
    )
    if functions:
        raise _invalid(
            "target",
            "an expression whose functions are sqrt, exp, log, abs, sin, cos "
            f"and tanh; it applies {', '.join(functions)}",
            text,
        )
    builtin = next(
        (key for key, known in _BUILTIN.items() if known == expression), None
    )
    return Target(builtin or str(expression), expression)


def _sympy(text):
    return parse_expr(
        text,
        local_dict={"a": _A, "b": _B},
        global_dict=dict(_NAMES),
        transformations=(*standard_transformations, convert_xor),
    )


# The paper's operations as SymPy expressions, to name an expression that is
# one of them by its key.
_BUILTIN = {key: _sympy(text) for key, text in TARGETS.items()}
