"""Tables of docs/experiments/number-words.md, from the records of
`examples/number_translation.py` beside the page."""

import numpy as np

from nalu_research.monitoring import markdown_table
from nalu_research.records import record

PAGE = "experiments/number-words/"
SPLITS = ("train", "validation", "test")
# The paper's Table 3 row beside each model (the pair readout has no LSTM;
# its brackets hold the paper's LSTM + NAC and LSTM + NALU).
PAPER_ROWS = {"NAC": "LSTM + NAC", "NALU": "LSTM + NALU"}


def _g3(value):
    """3 significant digits, trailing zeros kept; no exponent from 1,000 up."""
    if abs(value) >= 1000:
        return f"{float(f'{value:.3g}'):.0f}"
    return f"{value:#.3g}".rstrip(".")


def spread(values):
    """`median [min, max]`, to 3 significant digits."""
    return f"{_g3(np.median(values))} [{_g3(min(values))}, {_g3(max(values))}]"


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
    from nalu_research.tasks.number_words import PAPER_TABLE_3

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
    errors = [f"{_g3(top[k])} ({p:g})" for k, p in zip(SPLITS, paper, strict=True)]
    errors[2] = f"**{_g3(top['test'])}** ({paper[2]:g})"
    rows.append(
        [
            f"selected run ({who}{size}, {rate:g}, seed {top['seed']})",
            *([""] if len(models) > 1 else []),
            *errors,
            _g3(top["test_lone"]),
            _g3(top["test_other"]),
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
    from nalu_research.tasks.number_words import PAPER_TABLE_3

    rows = []
    for spec in names:
        name, _, note = spec.partition(":")
        data = record(f"{PAGE}number_translation_{name}.json")
        for model, (size, rate) in data["chosen"].items():
            runs = data["runs"][model][f"size {size}, lr {rate:g}"]
            paper = PAPER_TABLE_3[model]
            medians = [np.median([r[k] for r in runs]) for k in SPLITS]
            cells = [f"{_g3(m)} ({p:g})" for m, p in zip(medians, paper, strict=True)]
            per_seed = ", ".join(f"{_g3(r['test'])} ({r['best_step']:,})" for r in runs)
            rows.append(
                [
                    f"{model} ({note})" if note else model,
                    f"{size}, {rate:g}",
                    *cells,
                    per_seed,
                ]
            )
    header = [
        "model",
        "size, lr",
        "train MAE",
        "validation MAE",
        "test MAE",
        "test MAE per seed (best step)",
    ]
    return "\n".join(markdown_table(header, rows))


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
    for split in SPLIT_SEEDS:
        runs = _split_runs("mse_drop", split)
        test = [r["test"] for r in runs]
        every += runs
        table.append(
            [f"`--seed {split}`", f"{runs[0]['seed']}-{runs[-1]['seed']}",
             spread(test), f"{sum(t < 0.41 for t in test)}/{len(test)}",
             _g3(np.median([r["validation"] for r in runs]))]
        )  # fmt: skip
    test = [r["test"] for r in every]
    table.append(
        [f"all {len(SPLIT_SEEDS)} splits", f"{len(every)} runs", spread(test),
         f"{sum(t < 0.41 for t in test)}/{len(test)}",
         _g3(np.median([r["validation"] for r in every]))]
    )  # fmt: skip
    header = ["split", "seeds", "test MAE", "below 0.41", "validation MAE"]
    return "\n".join(markdown_table(header, table))


def protocols():
    """The protocol re-made on validation: median validation MAE of each
    loss and learning-rate drop on the splits it was compared on (10 seeds
    each), and the test MAE beside it, read after the choice."""
    table = []
    for protocol in PROTOCOLS:
        loss, drop = protocol.split("_")
        cells = []
        for split in PROTOCOL_SPLITS:
            runs = _split_runs(protocol, split)
            cells.append(spread([r["validation"] for r in runs]))
        runs = [r for s in PROTOCOL_SPLITS for r in _split_runs(protocol, s)]
        table.append(
            [loss.upper(), "x0.1 at 20,000" if drop == "drop" else "none", *cells,
             _g3(np.median([r["validation"] for r in runs])),
             _g3(np.median([r["test"] for r in runs]))]
        )  # fmt: skip
    header = ["loss", "lr drop", *(f"validation, split {s}" for s in PROTOCOL_SPLITS),
              "validation, both", "test, both (after)"]  # fmt: skip
    return "\n".join(markdown_table(header, table))


RECOMMENDED = PAGE + "number_translation_recommended.json"


def served():
    """The recommended model's SavedModel on the typed phrases (its export's
    check: served from a process without keras_nalu), each phrase's number,
    what it served and whether it is within 0.5."""
    check = record(RECOMMENDED)["served_check"]
    table = [
        [f"`{phrase!r}`", f"{number:g}", f"{value:.2f}",
         "yes" if abs(value - number) <= 0.5 else "**no**"]
        for phrase, number, value in zip(
            check["phrases"], check["values"], check["served"], strict=True
        )
    ]  # fmt: skip
    table.append(
        ["", "", f"{check['within']}/{len(table)} within 0.5",
         f"{check['flagged']}/5 invalid flagged"]
    )  # fmt: skip
    return "\n".join(
        markdown_table(["phrase", "number", "served", "within 0.5"], table)
    )
