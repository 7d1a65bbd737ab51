"""Tables of docs/experiments/mystery-arithmetic.md, from the records beside
the page."""

from nalu_research.monitoring import markdown_table
from nalu_research.records import record

DIVISION = "experiments/mystery-arithmetic/mystery_nau_nmru_division.json"
# The arms of the division record, with their rows' names.
ARMS = {
    "nau_20_normalized": "**normalized MSE (the default)**",
    "nau_20_mse": "`--loss mse`",
    "nau_10_normalized_single_pass_search": (
        "first version: `NAU(10)` beside the NMRU, normalized MSE, one-pass search"
    ),
    "nau_10_mse_single_pass_search": "`NAU(10)`, `--loss mse`, one-pass search",
}


def division():
    """NAU-NMRU on the mystery task with division, per arm: the tasks solved
    on every output (Wilson 95% interval from 10 seeds on), the outputs and
    the quotients solved."""
    from nalu_research.tasks.metrics import wilson_interval

    rows = []
    for arm, name in ARMS.items():
        seeds = record(DIVISION)[arm]
        tasks = sum(len(s["outputs_solved"]) == len(s["task"]) for s in seeds)
        outputs = sum(len(s["outputs_solved"]) for s in seeds)
        every = sum(len(s["task"]) for s in seeds)
        quotients = [
            (i in s["outputs_solved"])
            for s in seeds
            for i, t in enumerate(s["task"])
            if "/" in t
        ]
        bold = tasks == len(seeds)
        cells = [
            f"{tasks}/{len(seeds)}",
            f"{outputs}/{every}",
            f"{sum(quotients)}/{len(quotients)}",
        ]
        if bold:
            cells = [f"**{c}**" for c in cells]
        if len(seeds) >= 10:
            low, high = wilson_interval(tasks, len(seeds))
            cells[0] += f" [{low:.2f}, {high:.2f}]"
        else:
            name += f" (seeds 0-{len(seeds) - 1})"
        rows.append([name, *cells])
    header = [
        "NAU-NMRU, 10 seeds",
        "tasks solved on every output",
        "outputs solved",
        "quotients solved",
    ]
    return "\n".join(markdown_table(header, rows))
