"""Tables of docs/experiments/grid-world.md, from `grid_world.json` (A2C and
A2C + NAC) and `grid_world_counter.json` (the counter, beside them)."""

from nalu_research.experiments.grid_world import AGENTS, reward_cell
from nalu_research.monitoring import markdown_table
from nalu_research.records import record

PAGE = "experiments/grid-world/"
RECORD = PAGE + "grid_world.json"
COUNTER = PAGE + "grid_world_counter.json"
TRAINING = range(5, 13)  # the instructions T of the training range, starred


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
            reward_cell(
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
    return "\n".join(markdown_table(["T", *(AGENTS[a][0] for a in agents)], table))
