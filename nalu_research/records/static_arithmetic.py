"""Tables of docs/experiments/static-arithmetic.md, from the seed-batched
benchmark's record `arithmetic_benchmark_full.json` (25 seeds, 50,000
iterations); the helpers read any record of `examples/units_benchmark.py`.
"""

import numpy as np

from nalu_research.monitoring import markdown_table
from nalu_research.records import record
from nalu_research.tasks.metrics import rate, solved_at_cell

RECORD = "experiments/static-arithmetic/arithmetic_benchmark_full.json"
SYMBOLS = {
    "add": "a+b",
    "sub": "a-b",
    "mul": "a*b",
    "div": "a/b",
    "square": "a^2",
    "sqrt": "sqrt(a)",
}
NAMES = {"linear": "Linear", "relu6": "ReLU6", "nac": "NAC", "nalu": "NALU"}


def _g3(value):
    return "nan" if value is None or not np.isfinite(value) else f"{value:.3g}"


def runs(path, model, operation):
    """The runs of `model` on `operation` in the benchmark's record `path`."""
    return [
        r
        for r in record(path)["runs"]
        if r["model"] == model and r["operation"] == operation
    ]


def _table(cell_of, path=RECORD):
    arguments = record(path)["arguments"]
    rows = [
        [SYMBOLS[op], *(cell_of(runs(path, m, op), op, m) for m in arguments["models"])]
        for op in arguments["operations"]
    ]
    header = ["op", *(NAMES[m] for m in arguments["models"])]
    return "\n".join(markdown_table(header, rows))


def paper_scale(split):
    """Median `split` error (interpolation or extrapolation) on the paper's
    scale, the paper's Table 1 in brackets."""
    from nalu_research.tasks.static_arithmetic import PAPER_TABLE_1

    index = ("interpolation", "extrapolation").index(split)

    def cell_of(runs, op, model):
        paper = PAPER_TABLE_1.get(model, {}).get(op)
        ours = _g3(np.median([r[f"{split}_paper"] for r in runs]))
        return ours + (f" ({paper[index]})" if paper else "")

    return _table(cell_of)


def success():
    """Runs solved by the strict criterion, with the Wilson 95% interval."""
    return _table(lambda runs, op, model: rate(runs))


def solved_at():
    """Median iteration first solved among the solved runs, and the median
    sparsity error of the first layer where the model has one."""

    return _table(lambda runs, op, model: solved_at_cell(runs))
