"""Tables of docs/units/npu.md, from the records of the two-input task."""

import numpy as np

from nalu_research.monitoring import markdown_table
from nalu_research.records.static_arithmetic import SYMBOLS, runs
from nalu_research.records.units_benchmark import interval

PAGE = "units/npu/"
TWO_INPUTS = PAGE + "units_npu_two_inputs.json"
SIGNED = PAGE + "units_npu_two_inputs_signed.json"
MODELS = ("single-realnpu", "single-npu")


def two_inputs():
    """RealNPU beside NPU, one unit on two inputs: runs solved (Wilson 95%;
    in bold the row's best, where it solved any), runs snapped to verified
    exact weights, the median iteration solved."""
    rows = []
    for path, operations, signed in (
        (TWO_INPUTS, ("mul", "div", "sqrt"), ""),
        (SIGNED, ("mul", "div"), ", signed"),
    ):
        for op in operations:
            cells, medians = [], []
            wins = [sum(r["success"] for r in runs(path, m, op)) for m in MODELS]
            for model, won in zip(MODELS, wins, strict=True):
                here = runs(path, model, op)
                snapped = sum(bool(r.get("formula")) for r in here)
                solved = f"{won}/{len(here)}"
                solved = f"**{solved}**" if won and won == max(wins) else solved
                cells.append(f"{solved} {interval(won, len(here))}, {snapped} snapped")
                at = [r["solved_at"] for r in here if r["solved_at"] is not None]
                medians.append(f"{int(np.median(at)):,}" if at else "-")
            rows.append([SYMBOLS[op] + signed, *cells, " / ".join(medians)])
    header = ["task", "RealNPU", "NPU", "median iteration solved (RealNPU / NPU)"]
    return "\n".join(markdown_table(header, rows))
