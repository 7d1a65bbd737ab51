"""Tables of docs/units/recurrent-cells.md, from the record beside the page."""

from nalu_research.experiments.recurrent_cells import table
from nalu_research.monitoring import markdown_table
from nalu_research.records import record

RECORD = "units/recurrent-cells/recurrent_cells.json"


def results():
    """Every row of the page's run: each cell's error on each task at the
    training length and ten times it, solved seeds."""
    data = record(RECORD)
    header, lines = table(data["runs"], data["arguments"]["seeds"])
    return "\n".join(markdown_table(header, lines))
