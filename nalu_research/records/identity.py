"""Tables of docs/experiments/identity.md, from the records beside the page."""

from nalu_research.experiments.identity import table_5_lines
from nalu_research.records import record

RECORD = "experiments/identity/identity_extrapolation.json"


def table_5():
    """Table 5 of the page's record (the default run: 17 models x 3 seeds)."""
    runs = record(RECORD)["runs"]
    return "\n".join(table_5_lines(runs, list(dict.fromkeys(r["model"] for r in runs))))
