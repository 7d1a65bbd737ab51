"""Tables of docs/experiments/identity.md, from the records beside the page."""

import numpy as np

from nalu_research.monitoring import markdown_table
from nalu_research.records import record
from nalu_research.tasks.identity import PAPER_TABLE_5

RECORD = "experiments/identity/identity_extrapolation.json"


def paper_value(name):
    """The paper's Table 5 value of the model `name`, as the table shows it."""
    if name not in PAPER_TABLE_5:
        return "-"
    return "<0.0001" if name == "None" else f"{PAPER_TABLE_5[name]:.2f}"


def table_5_lines(runs, names):
    """Table 5's lines from the per-run rows `runs` of the models `names`:
    per model the mean and range over seeds of the error on the integers
    (`table_mae`), the mean error on the training range and the paper's
    value; `*` marks a model with a diverged run."""
    table = []
    for name in names:
        mine = [run for run in runs if run["model"] == name]
        mae = [run["table_mae"] for run in mine]
        train = [run["train_range_mae"] for run in mine]
        diverged = any(run["diverged"] for run in mine)
        table.append(
            [name + ("*" if diverged else ""), f"{np.mean(mae):.4g}",
             f"{min(mae):.4g} to {max(mae):.4g}", f"{np.mean(train):.2g}",
             paper_value(name)]
        )  # fmt: skip
    header = ["model", "ours: mean", "ours: min to max", "on [-5, 5]", "paper"]
    return markdown_table(header, table, align="<>>>>")


def table_5():
    """Table 5 of the page's record (the default run: 17 models x 3 seeds)."""
    runs = record(RECORD)["runs"]
    return "\n".join(table_5_lines(runs, list(dict.fromkeys(r["model"] for r in runs))))
