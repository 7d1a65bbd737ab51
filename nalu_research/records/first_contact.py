"""Tables of docs/experiments/first-contact.md, from `first_contact.json`."""

import numpy as np

from nalu_research.monitoring import markdown_table
from nalu_research.records import record

RECORD = "experiments/first-contact/first_contact.json"
THRESHOLDS = (1e-6, 1e-4)  # the "solved" columns, on the extrapolation error
# The units in the order of the page (the NPU's rows were added to the
# record last).
UNITS = ("Dense", "NAC", "NALU", "NAU", "NMU", "NMRU", "RealNPU", "NPU", "iNALU")


def _fmt(value):
    return f"{value:.1e}" if np.isfinite(value) else "inf"


def _cell(values):
    values = np.asarray(values, dtype=np.float64)
    return f"{_fmt(np.median(values))} [{_fmt(values.min())}, {_fmt(values.max())}]"


def solved(errors, threshold):
    """`k/n`: the seeds whose extrapolation error is at most `threshold`."""
    final = np.asarray(errors["extrapolation"], dtype=np.float64)
    return f"{int(np.sum(final <= threshold))}/{len(final)}"


def rows(operation):
    """The record's rows of `operation`, one per unit, in `UNITS`'s order."""
    found = {
        r["unit"]: r for r in record(RECORD)["rows"] if r["operation"] == operation
    }
    return [found[unit] for unit in UNITS if unit in found]


def errors(operation):
    """Per unit (and its snapped copy): the extrapolation error after 20 and
    after 100 epochs, median [min, max] over the seeds, and the seeds within
    1e-6 and 1e-4."""
    epochs = record(RECORD)["settings"]["epochs"]
    table = []
    for row in rows(operation):
        marks = [row["errors"]["early"], row["errors"]["final"]]
        name = row["unit"] + (" (diverged)" if row["diverged"] else "")
        cells = [_cell(m["extrapolation"]) for m in marks]
        table.append([name, *cells, *(solved(marks[-1], t) for t in THRESHOLDS)])
        if "snapped" in row:
            snapped = row["snapped"]
            verified = f"{sum(snapped['verified'])}/{len(snapped['verified'])}"
            table.append(
                [
                    f"{row['unit']} + snap_weights ({verified} verified)",
                    "-",
                    _cell(snapped["extrapolation"]),
                    *(solved(snapped, t) for t in THRESHOLDS),
                ]
            )
    header = ["unit", "after 20 epochs", f"after {epochs} epochs", "<= 1e-6", "<= 1e-4"]
    return "\n".join(markdown_table(header, table))
