"""Program evaluation with whole integers: Trask et al. (2018), Section 4.4.

The two tasks of Zaremba & Sutskever ("Learning to Execute", 2014) that the
paper uses, with each integer fed whole at one time step instead of character
by character: adding two integers, and short programs with an if statement,
+ and -. Training integers are drawn from [0, 100) (two digits), validation
from [100, 1000) (three digits) and test from [1000, 10000) (four digits).

Representation: a program is a sequence of steps, each a token (what the
step does) and a value (its integer, 0 when it has none). The program

    a = 37
    a = a + 52
    if a < 61:
        a = a - 8
    else:
        a = a + 9
    print(a)

is the five steps

    token:  SET  ADD  IF_LT  THEN_SUB  ELSE_ADD
    value:   37   52     61         8         9

and its target is 98 (37 + 52 = 89 is not below 61, so the else branch runs).
The addition task is the two steps `SET a, ADD b` (target a + b). The model
sees `(batch, steps, 1 + len(TOKENS))` arrays: the value, then a one-hot token.

The score is the paper's and Zaremba & Sutskever's: the percentage of digits
of the rounded prediction that match the target's, compared right-aligned
(units with units) over the longer of the two numbers, a minus sign counting
as a digit.
"""

import numpy as np

# fmt: off
TOKENS = (
    "SET", "ADD", "SUB", "IF_LT", "IF_GT",
    "THEN_ADD", "THEN_SUB", "ELSE_ADD", "ELSE_SUB",
)
# fmt: on
TASKS = ("addition", "program")
SPLITS = {"train": (0, 100), "validation": (100, 1000), "test": (1000, 10000)}


def run_program(tokens, values):
    """The value of `a` after the steps `(tokens, values)` (Python ints).

    >>> run_program(["SET", "ADD", "IF_LT", "THEN_SUB", "ELSE_ADD"],
    ...             [37, 52, 61, 8, 9])
    98
    """
    a, condition = 0, None
    for token, value in zip(tokens, values, strict=True):
        value = int(value)
        if token == "SET":
            a = value
        elif token in ("ADD", "SUB"):
            a = a + value if token == "ADD" else a - value
        elif token in ("IF_LT", "IF_GT"):
            condition = a < value if token == "IF_LT" else a > value
        elif token.startswith(("THEN", "ELSE")):
            if condition is None:
                raise ValueError(f"Received {token} before an IF step.")
            if condition == token.startswith("THEN"):
                a = a + value if token.endswith("ADD") else a - value
        else:
            raise ValueError(
                f"Received an invalid token, expected one of {TOKENS}. "
                f"Received: {token!r}"
            )
    return a


def program_text(tokens, values):
    """The program as Python-like source, for printing.

    >>> print(program_text(["SET", "ADD"], [12, 30]))
    a = 12; a = a + 30; print(a)
    """
    lines = []
    for token, value in zip(tokens, values, strict=True):
        op = "+" if token.endswith("ADD") else "-"
        if token == "SET":
            lines.append(f"a = {value}")
        elif token in ("ADD", "SUB"):
            lines.append(f"a = a {op} {value}")
        elif token.startswith("IF"):
            lines.append(f"if a {'<' if token == 'IF_LT' else '>'} {value}:")
        elif token.startswith("THEN"):
            lines.append(f"a = a {op} {value}")
        else:
            lines.append(f"else: a = a {op} {value}")
    return "; ".join(lines).replace(":;", ":") + "; print(a)"


def digit_accuracy(y_true, y_pred):
    """Percentage of matching digits of `round(y_pred)` and `y_true`.

    Digits are compared right-aligned over the longer of the two numbers (a
    missing digit never matches); a minus sign counts as a digit.

    >>> round(digit_accuracy([1234, 56], [1239.2, 56.4]), 2)  # 5 of 6 digits
    83.33
    >>> digit_accuracy([100], [99.0])
    0.0
    """
    y_true = np.rint(np.asarray(y_true, dtype=np.float64)).astype(np.int64).ravel()
    y_pred = np.asarray(y_pred, dtype=np.float64).ravel()
    if y_true.shape != y_pred.shape:
        raise ValueError(
            "Received y_true and y_pred of different sizes, expected equal "
            f"sizes. Received: {y_true.size} and {y_pred.size}"
        )
    y_pred = np.where(np.isfinite(y_pred), y_pred, 10.0**18)
    y_pred = np.rint(np.clip(y_pred, -(10.0**18), 10.0**18)).astype(np.int64)
    matched = total = 0
    for true, pred in zip(y_true, y_pred, strict=True):
        a, b = str(true), str(pred)
        width = max(len(a), len(b))
        a, b = a.rjust(width), b.rjust(width)
        matched += sum(x == y for x, y in zip(a, b, strict=True))
        total += width
    return 100.0 * matched / total


class ProgramEvaluation:
    """Generator of the addition task or of short programs.

    Args:
        task: "addition" (`a = x; a = a + y`) or "program" (set, add or
            subtract, then an if/else that adds or subtracts).

    Example:

    >>> from nalu_research.tasks.program_evaluation import ProgramEvaluation
    >>> generator = ProgramEvaluation("program")
    >>> x, y = generator.sample(3, "test", seed=0)
    >>> x.shape, y.shape
    ((3, 5, 10), (3,))
    """

    def __init__(self, task="program"):
        from keras_nalu import validation

        self.task = validation.one_of("task", task, TASKS)
        self.steps = 2 if task == "addition" else 5

    def programs(self, n, split="train", seed=None):
        """`n` programs `(tokens, values)`: a list of token tuples and an
        int64 array of values `(n, steps)`, integers of the split's range."""
        from keras_nalu import validation

        validation.one_of("split", split, tuple(SPLITS))
        n = validation.positive_int("n", n)
        rng = np.random.default_rng(seed)
        low, high = SPLITS[split]
        values = rng.integers(low, high, size=(n, self.steps))
        if self.task == "addition":
            return [("SET", "ADD")] * n, values
        add_sub = np.array(["ADD", "SUB"])
        choices = rng.integers(0, 2, size=(n, 4))
        tokens = [
            (
                "SET",
                add_sub[c[0]],
                ("IF_LT", "IF_GT")[c[1]],
                "THEN_" + add_sub[c[2]],
                "ELSE_" + add_sub[c[3]],
            )
            for c in choices
        ]
        return tokens, values

    def encode(self, tokens, values):
        """`(n, steps, 1 + len(TOKENS))` float32: the value, then one-hot."""
        values = np.asarray(values)
        x = np.zeros(values.shape + (1 + len(TOKENS),), dtype=np.float32)
        x[..., 0] = values
        for i, program in enumerate(tokens):
            for t, token in enumerate(program):
                x[i, t, 1 + TOKENS.index(token)] = 1.0
        return x

    def decode(self, x):
        """The `(tokens, values)` of encoded programs `x` (`encode`'s inverse)."""
        x = np.asarray(x)
        tokens = [tuple(TOKENS[i] for i in row) for row in x[..., 1:].argmax(-1)]
        return tokens, np.rint(x[..., 0]).astype(np.int64)

    def sample(self, n, split="train", seed=None):
        """`n` examples `(x, y)` of a split; `y` is float32 of shape `(n,)`."""
        tokens, values = self.programs(n, split, seed)
        y = np.array([run_program(t, v) for t, v in zip(tokens, values, strict=True)])
        return self.encode(tokens, values), y.astype(np.float32)
