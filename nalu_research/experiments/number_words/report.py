"""What `number_words` prints and plots: the line that says what the runs are
(`describe`), Table 3 beside the paper's (`print_table_3`, its rows by
`table_3_row`, which the docs' tables write too: `nalu_research.records.
number_words`), the test MAE apart on the phrases after lone words
(`print_lone_word_errors`), Figure 3 (`figure_3`), the served model's check
(`print_served_check`) and the figure (`plot`)."""

import numpy as np

from nalu_research.monitoring import markdown_table
from nalu_research.tasks.number_words import (
    INVALID_PHRASES,
    PAPER_FIGURE_3,
    PAPER_TABLE_3,
    WITHIN,
    encode,
)

SPLITS = ("train", "validation", "test")
TABLE_3_HEADER = ["model", "size, lr", "train MAE", "validation MAE", "test MAE"]
TABLE_3_HEADER += ["test MAE per seed (best step)"]


def g3(value):
    """3 significant digits, trailing zeros kept; no exponent from 1,000 up;
    "–" for a metric over no examples (None)."""
    if value is None:
        return "–"
    if abs(value) >= 1000:
        return f"{float(f'{value:.3g}'):.0f}"
    return f"{value:#.3g}".rstrip(".")


def spread(values):
    """`median [min, max]`, to 3 significant digits; "–" if one is absent."""
    if None in values:
        return "–"
    return f"{g3(np.median(values))} [{g3(min(values))}, {g3(max(values))}]"


def describe(args, data, seeds):
    """The line that says what the runs are."""
    grid = "embedding" if args.readout == "pairs" else "LSTM"
    embeddings = args.embedding_size and f" (embeddings of {args.embedding_size})"
    drop = args.learning_rate_drop and ", learning rate x{1:g} after step {0}".format(
        *args.learning_rate_drop
    )
    read = "the last token" if args.targets == "last" else "every token's running value"
    return (
        f"Number words 0-999, split seed {args.seed}: "
        + ", ".join(f"{len(data[s][1])} {s}" for s in data)
        + f". Grid: {grid} sizes {args.sizes} x learning rates {args.learning_rates}"
        f"{embeddings or ''}, seeds {seeds}; {args.steps} full-batch Adam steps per "
        f"run{drop or ''}, {args.loss.upper()} loss on {read}, {args.readout} "
        f"readout, validation every {args.eval_every} steps (best kept).\n"
    )


def table_3_row(name, size, rate, runs, paper):
    """A row of Table 3 (`TABLE_3_HEADER`): the median MAE of each split over
    the seeds' `runs` (their errors), `paper`'s beside them in brackets, and
    each seed's test MAE at its best step."""
    medians = [np.median([r[k] for r in runs]) for k in SPLITS]
    cells = [f"{g3(m)} ({p:g})" for m, p in zip(medians, paper, strict=True)]
    per_seed = ", ".join(f"{g3(r['test'])} ({r['best_step']:,})" for r in runs)
    return [name, f"{size}, {rate:g}", *cells, per_seed]


def print_table_3(args, chosen):
    """Prints Table 3: the `chosen` configurations' median MAE over the
    seeds, the paper's beside them."""
    from nalu_research.models.number_words import MODELS, model_name

    print(
        "\nTable 3: mean absolute error, median over seeds of the configuration "
        "with the lowest median validation MAE (paper's values in brackets)\n"
    )
    table = []
    papers = {model_name(k, args.readout): PAPER_TABLE_3[MODELS[k]] for k in MODELS}
    for name, (size, rate, runs) in chosen.items():
        row = table_3_row(name, size, rate, [r[0] for r in runs], papers[name])
        row[1] += " (diverged)" if runs[0][0]["diverged"] else ""
        table.append(row)
    print("\n".join(markdown_table(TABLE_3_HEADER, table)))
    if args.readout == "pairs":
        print(
            "\nThe models over word pairs are not the paper's (no LSTM, see "
            "--readout pairs): their brackets hold the paper's LSTM + NAC and "
            "LSTM + NALU."
        )


def print_lone_word_errors(task, after_lone, chosen):
    """Prints the chosen configurations' test MAE apart on the phrases that
    use a word training shows only alone (`after_lone`) and on the others,
    median over the seeds [min, max]."""
    if not after_lone.any():
        print("\nNo test phrase uses a word that training shows only alone.")
        return
    lone = ", ".join(w for w in task.lone_words() if w != "zero")
    print(
        f"\nTest MAE apart: on the {after_lone.sum()} test phrases that use a "
        f"word training shows only alone ({lone}), and on the other "
        f"{(~after_lone).sum()}; median over the seeds [min, max]:"
    )
    for name, (_, _, runs) in chosen.items():
        parts = [
            spread([r[0][key] for r in runs]) for key in ("test_lone", "test_other")
        ]
        print(f"  {name}: {parts[0]} on those, {parts[1]} on the others")


def figure_3(steps_model, model):
    """Prints the Figure 3 view of `steps_model` (named `model`), the
    prediction after each token of the paper's queries, the paper's NALU
    below; returns `{query: predictions}`."""
    import keras

    print(
        f"\nFigure 3: prediction after each token, from the best model by "
        f"validation MAE ({model}); the paper's NALU below each.\n"
    )
    queries = list(PAPER_FIGURE_3)
    predictions = keras.ops.convert_to_numpy(
        steps_model(encode(queries), training=False)
    )
    figure = {}
    for query, row in zip(queries, predictions, strict=True):
        tokens = query.split()
        values = row[: len(tokens)]
        figure[query] = values.tolist()
        width = [max(len(t), 8) for t in tokens]
        print("  " + " ".join(f"{t:>{w}}" for t, w in zip(tokens, width, strict=True)))
        print(
            "  " + " ".join(f"{v:>{w}.2f}" for v, w in zip(values, width, strict=True))
        )
        paper = PAPER_FIGURE_3[query]
        print(
            "  "
            + " ".join(f"{v:>{w}g}" for v, w in zip(paper, width, strict=True))
            + "  (paper)\n"
        )
    return figure


def print_served_check(check):
    """Prints the served model's check (`tasks.number_words.served_check`)."""
    print(
        f"Served {check['within']}/{len(check['phrases'])} typed phrases within "
        f"{WITHIN} of their number and flagged {check['flagged']}/"
        f"{len(INVALID_PHRASES)} invalid ones: "
        + ", ".join(
            f"{p!r} {v:.2f}"
            for p, v in zip(check["phrases"], check["served"], strict=True)
        )
    )


def plot(chosen, figure, figure_model, plt):
    """Each model's validation MAE over training (its `chosen`
    configuration, a line per seed) and Figure 3 (`figure`, the prediction
    after each token of `figure_model`, the paper's NALU dashed)."""
    fig, (curves, trace) = plt.subplots(1, 2, figsize=(11, 3.8))
    for name, (size, rate, runs) in chosen.items():
        color = None
        for i, (errors, *_) in enumerate(runs):
            (line,) = curves.plot(
                errors["steps"],
                errors["curves"]["validation"],
                color=color,
                marker="." if len(errors["steps"]) == 1 else None,
                label=f"{name} (size {size}, lr {rate:g})" if i == 0 else None,
            )
            color = line.get_color()
    curves.set_yscale("log")
    curves.set_xlabel("training steps")
    curves.set_ylabel("validation MAE")
    curves.set_title("Chosen configurations, a line per seed", fontsize=10)
    curves.legend(fontsize=8)
    for query, values in figure.items():
        read = range(1, len(values) + 1)
        (line,) = trace.plot(read, values, marker="o", label=query)
        trace.plot(read, PAPER_FIGURE_3[query], "--", color=line.get_color(), alpha=0.6)
    trace.xaxis.get_major_locator().set_params(integer=True)
    trace.set_xlabel("tokens read")
    trace.set_ylabel("prediction")
    trace.set_title(f"Figure 3: {figure_model} (dashed: the paper's NALU)", fontsize=10)
    trace.legend(fontsize=7)
    fig.tight_layout()
    return fig
