"""Tables of docs/experiments/feynman.md, from the records beside the page."""

from nalu_research.experiments.feynman.tables import counts_table, equations_table
from nalu_research.monitoring import markdown_table
from nalu_research.records import record

RECORD = "experiments/feynman/feynman.json"


def counts(path=RECORD):
    """Equations recovered on a majority of the seeds, by form: ours and
    gplearn's."""
    data = record(path)
    header, lines = counts_table(data["runs"], data["arguments"]["seeds"])
    return "\n".join(markdown_table(header, lines))


def equations(path=RECORD):
    """One line per equation: its formula, what each found, the errors."""
    header, lines = equations_table(record(path)["runs"])
    return "\n".join(markdown_table(header, lines))
