"""Tables of docs/experiments/mixed-formulas.md, from the record beside the page."""

from nalu_research.experiments.mixed_formulas import table
from nalu_research.monitoring import markdown_table
from nalu_research.records import record

RECORD = "experiments/mixed-formulas/mixed_formulas.json"


def results():
    """Every row of the page's run: errors as trained and snapped, solved
    seeds, a formula read off a snapped model."""
    data = record(RECORD)
    header, lines = table(data["runs"], data["arguments"]["seeds"])
    return "\n".join(markdown_table(header, lines))
