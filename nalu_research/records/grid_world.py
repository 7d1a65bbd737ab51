"""Tables of docs/experiments/grid-world.md, from `grid_world.json` (A2C and
A2C + NAC) and `grid_world_counter.json` (the counter, beside them)."""

import numpy as np

from nalu_research.monitoring import markdown_table
from nalu_research.records import record

PAGE = "experiments/grid-world/"
RECORD = PAGE + "grid_world.json"
COUNTER = PAGE + "grid_world_counter.json"
NAMES = {"a2c": "A2C", "a2c_nac": "A2C + NAC", "a2c_counter": "A2C + exact counter"}
TRAINING = range(5, 13)  # the instructions T of the training range, starred


def _median_arrival(rows):
    """The median over seeds of the median arrival time, over the seeds
    whose agent reached the target in at least a quarter of the episodes."""
    times = [
        row["median_arrival"]
        for row in rows
        if row["median_arrival"] is not None and row["arrived"] >= 0.25
    ]
    return float(np.median(times)) if times else None


def _cell(rows, bold=False):
    rewards = [row["reward"] for row in rows]
    median, low, high = (
        f"{v:+.2f}" for v in (np.median(rewards), min(rewards), max(rewards))
    )
    median = f"**{median}**" if bold else median
    text = median if median == low == high else f"{median} [{low}, {high}]"
    arrival = _median_arrival(rows)
    return text + (" (never)" if arrival is None else f" (t={arrival:g})")


def rewards(instructions, agents, bold=None):
    """The mean episode reward per instruction T: the median over the seeds
    [their minimum, maximum], the median arrival time in brackets.

    `instructions`: the rows, `1,4,13-21`; `agents`: the columns,
    `a2c,a2c_nac`; `bold`: a T whose row and last agent's median are set
    in bold."""
    agents = agents.split(",")
    runs = [
        *record(RECORD)["runs"],
        *(r for r in record(COUNTER)["runs"] if r["agent"] == "a2c_counter"),
    ]
    first = record(RECORD)["arguments"]["eval_instructions"][0]

    def cells(t, bolded=False):
        return [
            _cell(
                [r["evaluation"][t - first] for r in runs if r["agent"] == a],
                bolded and a == agents[-1],
            )
            for a in agents
        ]

    table = []
    for part in instructions.split(","):
        low, _, high = part.partition("-")
        for t in range(int(low), int(high or low) + 1):
            name = f"{t}*" if t in TRAINING else str(t)
            bolded = bold is not None and t == int(bold)
            table.append([f"**{name}**" if bolded else name, *cells(t, bolded)])
    return "\n".join(markdown_table(["T", *(NAMES[a] for a in agents)], table))
