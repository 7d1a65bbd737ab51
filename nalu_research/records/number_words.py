"""Tables of docs/experiments/number-words.md, from the records of
`examples/number_words.py` beside the page (those written before its rename,
by `examples/number_translation.py`, keep their names: `number_translation_*`)."""

import numpy as np

from nalu_research.experiments.number_words.report import (
    SPLITS,
    TABLE_3_HEADER,
    g3,
    spread,
    table_3_row,
)
from nalu_research.monitoring import markdown_table
from nalu_research.records import record
from nalu_research.tasks.number_words import PAPER_TABLE_3

PAGE = "experiments/number-words/"
# The paper's Table 3 row beside each model (the pair readout has no LSTM;
# its brackets hold the paper's LSTM + NAC and LSTM + NALU).
PAPER_ROWS = {"NAC": "LSTM + NAC", "NALU": "LSTM + NALU"}


def _validation(run):
    return np.nan_to_num(run["validation"], nan=np.inf)


def protocol(name):
    """The paper's protocol on the record `number_translation_NAME.json`:
    per model and configuration (size, learning rate) the MAE of each split
    and of the test phrases after a lone word and the others, median over
    the seeds [min, max]; the configuration of the lowest median validation
    MAE chosen, and the run of lowest validation MAE over them all
    selected (the paper's Appendix D: "the best model by validation loss over
    layer sizes {16, 32}, learning rates {0.01, 0.001}, and 10
    initializations")."""
    data = record(f"{PAGE}number_translation_{name}.json")
    arguments = data["arguments"]
    models = data["runs"]
    _, best_model, (size, rate), top = min(
        (
            (_validation(run), model, (s, r), run)
            for model, configurations in models.items()
            for s in arguments["sizes"]
            for r in arguments["learning_rates"]
            for run in configurations[f"size {s}, lr {r:g}"]
        ),
        key=lambda found: found[0],
    )
    rows = []
    for model, configurations in models.items():
        chosen = tuple(data["chosen"][model])
        for config in (
            (s, r) for s in arguments["sizes"] for r in arguments["learning_rates"]
        ):
            runs = configurations[f"size {config[0]}, lr {config[1]:g}"]
            cells = [
                spread([r[k] for r in runs])
                for k in (*SPLITS, "test_lone", "test_other")
            ]
            label = f"{config[0]}, {config[1]:g}"
            if config == chosen:
                label = f"**{label}** (chosen)"
                if model == best_model:
                    median, rest = cells[2].split(" ", 1)
                    cells[2] = f"**{median}** {rest}"
            rows.append([*([model] if len(models) > 1 else []), label, *cells])
    short = best_model.split()[-1] if len(models) == 1 else best_model.split()[0]
    paper = PAPER_TABLE_3[PAPER_ROWS[short]]
    who = f"{short}, " if len(models) > 1 else ""
    errors = [f"{g3(top[k])} ({p:g})" for k, p in zip(SPLITS, paper, strict=True)]
    errors[2] = f"**{g3(top['test'])}** ({paper[2]:g})"
    rows.append(
        [
            f"selected run ({who}{size}, {rate:g}, seed {top['seed']})",
            *([""] if len(models) > 1 else []),
            *errors,
            g3(top["test_lone"]),
            g3(top["test_other"]),
        ]
    )
    header = [
        *(["model"] if len(models) > 1 else []),
        "size, lr",
        "train MAE",
        "validation MAE",
        "test MAE",
        "test, 26 phrases after lone words",
        "test, the other 605",
    ]
    return "\n".join(markdown_table(header, rows))


def chosen(*names):
    """Each model's chosen configuration in the records `number_translation_
    NAME.json`: the median MAE of each split over the seeds (the paper's in
    brackets), and each seed's test MAE at its best step. A `NAME:NOTE` adds `(NOTE)`
    to its models' names."""
    rows = []
    for spec in names:
        name, _, note = spec.partition(":")
        data = record(f"{PAGE}number_translation_{name}.json")
        for model, (size, rate) in data["chosen"].items():
            runs = data["runs"][model][f"size {size}, lr {rate:g}"]
            label = f"{model} ({note})" if note else model
            rows.append(table_3_row(label, size, rate, runs, PAPER_TABLE_3[model]))
    return "\n".join(markdown_table(TABLE_3_HEADER, rows))


SPLIT_RUNS = PAGE + "splits/pairs_{protocol}_split{split}.json"
SPLIT_SEEDS = (0, 100, 200, 300, 400)
PROTOCOLS = ("mae_none", "mae_drop", "mse_none", "mse_drop")
PROTOCOL_SPLITS = (100, 200)


def _split_runs(protocol, split):
    """The runs of the pair model's record for `protocol` on `split`."""
    data = record(SPLIT_RUNS.format(protocol=protocol, split=split))
    (runs,) = data["runs"]["NALU over word pairs"].values()
    return runs


def splits():
    """The NALU over word pairs (MSE, the drop) on each split drawn by the
    paper's rule: test MAE, median [min, max] over its 10 seeds, the seeds
    below the paper's 0.41, and the median validation MAE that selects;
    the last row all splits' runs together."""
    table, every = [], []

    def row(label, seeds, runs):
        test = [r["test"] for r in runs]
        below = f"{sum(t < 0.41 for t in test)}/{len(test)}"
        validation = g3(np.median([r["validation"] for r in runs]))
        table.append([label, seeds, spread(test), below, validation])

    for split in SPLIT_SEEDS:
        runs = _split_runs("mse_drop", split)
        every += runs
        row(f"`--seed {split}`", f"{runs[0]['seed']}-{runs[-1]['seed']}", runs)
    row(f"all {len(SPLIT_SEEDS)} splits", f"{len(every)} runs", every)
    header = ["split", "seeds", "test MAE", "below 0.41", "validation MAE"]
    return "\n".join(markdown_table(header, table))


def protocols():
    """The protocol re-made on validation: median validation MAE of each
    loss and learning-rate drop on the splits it was compared on (10 seeds
    each), and the test MAE beside it, read after the choice."""
    table = []
    for protocol in PROTOCOLS:
        loss, drop = protocol.split("_")
        each = [_split_runs(protocol, split) for split in PROTOCOL_SPLITS]
        cells = [spread([r["validation"] for r in runs]) for runs in each]
        runs = [r for split_runs in each for r in split_runs]
        both = [g3(np.median([r[k] for r in runs])) for k in ("validation", "test")]
        lr_drop = "x0.1 at 20,000" if drop == "drop" else "none"
        table.append([loss.upper(), lr_drop, *cells, *both])
    splits = [f"validation, split {s}" for s in PROTOCOL_SPLITS]
    header = ["loss", "lr drop", *splits, "validation, both", "test, both (after)"]
    return "\n".join(markdown_table(header, table))


RECOMMENDED = PAGE + "number_translation_recommended.json"


def served():
    """The recommended model's SavedModel on the typed phrases (its export's
    check: served from a process without keras_nalu), each phrase's number,
    what it served and whether it is within 0.5."""
    check = record(RECOMMENDED)["served_check"]
    found = zip(check["phrases"], check["values"], check["served"], strict=True)
    table = [
        [f"`{p!r}`", f"{n:g}", f"{v:.2f}", "yes" if abs(v - n) <= 0.5 else "**no**"]
        for p, n, v in found
    ]
    within = f"{check['within']}/{len(table)} within 0.5"
    table.append(["", "", within, f"{check['flagged']}/5 invalid flagged"])
    return "\n".join(
        markdown_table(["phrase", "number", "served", "within 0.5"], table)
    )


# The tables below are declared as data (`TABLES`): per row its label(s) and
# cells, drawn from a run's JSON by the small functions before it.


def run(where):
    """A run's JSON as `examples/number_words.py` wrote it: `where` is
    a record's file name in the page's folder, or `FILE:NAME`, the run
    `NAME` of a record that gathers several (under `runs`, or `readings`)."""
    name, _, key = where.partition(":")
    found = record(PAGE + name)
    return (found.get("runs") or found["readings"])[key] if key else found


def seeds(where, model="LSTM + NALU"):
    """The runs of the seeds of `model` in the run `where` (its one
    configuration)."""
    found = run(where)["runs"]
    if isinstance(found, list):
        return found
    (runs,) = found[model].values()
    return runs


def _paper(model):
    """The paper's Table 3 row of `model`: train, validation, test MAE."""
    return dict(zip(SPLITS, PAPER_TABLE_3[model], strict=True))


def _mae(value):
    """3 significant digits; `3.5e+04` from 10,000 up (a run blown up)."""
    return f"{value:.2g}" if abs(value) >= 1e4 else g3(value)


def medians(where, model="LSTM + NALU", splits=SPLITS, paper=False, bold=()):
    """The median MAE over the seeds of `model` in the run `where` of each
    of `splits`, with (`paper`) the paper's Table 3 row of the model in
    brackets; in bold the splits of `bold`."""
    runs = seeds(where, model)
    cells = []
    for split in splits:
        text = g3(np.median([r[split] for r in runs]))
        text = f"**{text}**" if split in bold else text
        cells.append(f"{text} ({_paper(model)[split]:g})" if paper else text)
    return cells


def per_seed(where, model="LSTM + NALU", steps=True, bold=False):
    """One cell: each seed's test MAE, with its best step (`steps`); in bold
    the lowest (`bold`)."""
    runs = seeds(where, model)
    low = min(r["test"] for r in runs)
    cells = []
    for r in runs:
        text = _mae(r["test"])
        text = f"**{text}**" if bold and r["test"] == low else text
        cells.append(f"{text} ({r['best_step']:,})" if steps else text)
    return [", ".join(cells)]


def errors(where, model="LSTM + NALU", steps=True, paper=False, bold=None):
    """`medians` of train, validation and test, then `per_seed`; in bold
    (`bold`) the median test MAE (`test`) or the lowest seed's (`seed`)."""
    test = ("test",) if bold == "test" else ()
    seeds_cell = per_seed(where, model, steps, bold == "seed")
    return [*medians(where, model, paper=paper, bold=test), *seeds_cell]


def wall(where, seconds=False):
    """One cell: a run's wall time, in minutes (and `seconds`)."""
    total = run(where)["seconds"]
    if seconds:
        minutes, rest = divmod(round(total), 60)
        return [f"{minutes} min {rest} s"]
    return [f"{round(total / 60)} min"]


def figure_3(where, phrase="three hundred and thirty four"):
    """One cell: the best model's prediction after each token of `phrase`."""
    return [", ".join(f"{v:.2f}" for v in run(where)["figure_3"][phrase])]


def flags(where):
    """A configured run's flags after `--readout configured` in its command."""
    return run(where)["command"].split("--readout configured ", 1)[1]


def nan_at(where, model):
    """` (NaN at S)` where the seeds of `model` in `where` stopped on a NaN
    (`nan by step S of N of epoch E`), else nothing."""
    import re

    diverged = seeds(where, model)[0]["diverged"]
    if not diverged:
        return ""
    found = re.search(r"nan by step (\d+) of (\d+) of epoch (\d+)", diverged)
    step, per, epoch = map(int, found.groups())
    return f" (NaN at {(epoch - 1) * per + step:,})"


def paper_row(blank=0, model="LSTM + NALU", before=0):
    """The paper's Table 3 row of `model`, with `before` blank cells before
    its errors and `blank` after."""
    cells = [f"{v:g}" for v in _paper(model).values()]
    return [f"paper ({model})", *[""] * before, *cells, *[""] * blank]


def table(name):
    """The table `name` of `TABLES`."""
    header, rows = TABLES[name]()
    rows = [
        [cell for part in row for cell in ([part] if isinstance(part, str) else part)]
        for row in rows
    ]
    return "\n".join(markdown_table(header, rows))


NALU_300K = "number_translation_nalu_300k.json"
READINGS = "number_translation_readings_300k.json:"
# A reading at 300,000 steps with the recurrent readout, by its targets.
RECURRENT_300K = READINGS + "size 32, lr 0.01, recurrent readout, {} targets"
PILOTS = "number_translation_pilots_5k.json:"
TWO_LAYER = "number_translation_two_layer.json:"
CONFIGURED = "number_translation_configured.json:"
TOKEN_VALUES = "number_translation_token_values_pilots.json:token values "

# fmt: off
TABLES = {
    "readings": lambda: (
        ["reading", "command", "train MAE", "validation MAE", "test MAE",
         "test MAE per seed (best step)", "wall"],
        [
            ["size 32, lr 0.01 (above)", "`--sizes 32 --learning-rates 0.01`",
             errors(NALU_300K, bold="test"), wall(NALU_300K)],
            *([label, f"`{command}`", errors(READINGS + label), wall(READINGS + label)]
              for label, command in (
                  ("size 32, lr 0.001", "--sizes 32 --learning-rates 0.001"),
                  ("LSTM 10, embedding 256, lr 0.01",
                   "--sizes 10 --embedding-size 256 --learning-rates 0.01"))),
            paper_row(2, before=1),
        ],
    ),
    "readouts-5k": lambda: (
        ["readout, targets", "LSTM + NALU train", "validation", "test",
         "test per seed", "LSTM + NAC test"],
        [
            [label, errors(PILOTS + key, steps=False),
             medians(PILOTS + key, "LSTM + NAC", ["test"])]
            for label, key in (("step, last (the default)", "step_last"),
                               ("step, prefix", "step_prefix"),
                               ("recurrent, last", "recurrent_last"),
                               ("recurrent, prefix", "recurrent_prefix"))
        ],
    ),
    "readouts-300k": lambda: (
        ["readout, targets", "train MAE", "validation MAE", "test MAE",
         "test MAE per seed (best step)", "wall"],
        [
            ["step, last (above)", errors(NALU_300K, bold="test"), wall(NALU_300K)],
            *([f"recurrent, {targets}", errors(RECURRENT_300K.format(targets)),
               wall(RECURRENT_300K.format(targets))] for targets in ("prefix", "last")),
            paper_row(2),
        ],
    ),
    "two-layer": lambda: (
        ["readout, steps", "model", "train MAE", "validation MAE", "test MAE",
         "test MAE per seed (best step)"],
        [
            *([f"two-layer, {steps}{nan_at(TWO_LAYER + key, model)}", model,
               errors(TWO_LAYER + key, model, paper=True,
                      bold="test" if model == "LSTM + NAC" else None)]
              for model in ("LSTM + NAC", "LSTM + NALU")
              for steps, key in (("5,000", "5,000 steps, NAC and NALU"),
                                 ("300,000", f"300,000 steps, {model[7:]}"))),
            ["step (above, 5,000 steps)", "LSTM + NAC",
             errors(f"{PILOTS}step_last", "LSTM + NAC", steps=False)],
            ["step (above, 300,000 steps)", "LSTM + NALU",
             errors(NALU_300K, steps=False)],
        ],
    ),
    "configured": lambda: (
        ["targets, budget (flags)", "train MAE", "validation MAE", "test MAE",
         "test MAE per seed (best step)", "wall"],
        [
            *([f"{label} (`{flags(CONFIGURED + key)}`)",
               errors(CONFIGURED + key, bold=bold),
               wall(CONFIGURED + key, seconds=True)]
              for label, key, bold in (
                  ("per token, 100,000 steps, lr x0.1 after 70,000",
                   "prefix targets, 100,000 steps, lr x0.1 after 70,000", "seed"),
                  ("last token, 60,000 steps", "last-token targets, 60,000 steps",
                   None))),
            paper_row(2),
        ],
    ),
    "token-values": lambda: (
        ["token values, steps", "train MAE", "validation MAE", "test MAE, per seed",
         '"three hundred and thirty four" (best seed)'],
        [
            [label, medians(TOKEN_VALUES + key, splits=("train", "validation")),
             per_seed(TOKEN_VALUES + key, steps=False), figure_3(TOKEN_VALUES + key)]
            for label, key in (
                ("linear, 2,000", "linear, targets prefix, 2000 steps"),
                ("log, 2,000", "log, targets prefix, 2000 steps"),
                ("log, 10,000", "log, targets prefix, 10000 steps"),
                ("log, 10,000, last-token targets", "log, targets last, 10000 steps"))
        ],
    ),
}
# fmt: on
