"""Tables of docs/experiments/program-evaluation.md, from the records of
`examples/program_evaluation.py` beside the page."""

import numpy as np

from nalu_research.monitoring import markdown_table
from nalu_research.records import record

PAGE = "experiments/program-evaluation/"
STEPS_100K = PAGE + "program_evaluation_100k.json"
STEPS_1M = PAGE + "program_evaluation_1m.json"
SPLITS = ("train", "validation", "test")
HEADER = ["model", "train (2 digits)", "validation (3 digits)", "test (4 digits)"]
PAPER = {
    "LSTM": "does not extrapolate",
    "NALU": "about 95% or more",
    "UGRNN": "does not extrapolate",
}


def cell(seeds, split, bold=False):
    """The median over the seeds of the digits correct at the last step, each
    seed's in brackets."""
    values = [s["final"][split] for s in seeds]
    median = f"{np.median(values):.1f}%"
    median = f"**{median}**" if bold else median
    return f"{median} ({', '.join(f'{v:.1f}' for v in values)})"


def final(path, model, name=None, bold_test=False):
    seeds = record(path)["results"][model]
    return [name or model, *(cell(seeds, s, bold_test and s == "test") for s in SPLITS)]


def at_100k():
    """Digits correct after 100,000 steps per model, beside the paper's
    Figure 4."""
    rows = [
        [*final(STEPS_100K, model, bold_test=model == "NALU"), PAPER[model]]
        for model in record(STEPS_100K)["results"]
    ]
    return "\n".join(markdown_table([*HEADER, "paper's Figure 4, test"], rows))


def at_1m():
    """The NALU after the paper's 1,000,000 steps, beside its 100,000."""
    steps = record(STEPS_1M)["arguments"]["steps"]
    rows = [
        final(STEPS_1M, "NALU", f"NALU, {steps:,} steps", bold_test=True),
        final(
            STEPS_100K,
            "NALU",
            f"NALU, {record(STEPS_100K)['arguments']['steps']:,} steps (above)",
        ),
    ]
    return "\n".join(markdown_table(HEADER, rows))
