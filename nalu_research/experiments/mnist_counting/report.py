"""What `mnist_counting` prints and plots of its models: a line per
trained model (`describe_run`), the table of every model beside the
paper's Table 2 (`print_table`) and the figure (`plot`)."""

import numpy as np

from nalu_research.experiments.mnist_counting.evaluation import ERROR_QUANTILES
from nalu_research.models import mnist as models
from nalu_research.monitoring import markdown_table
from nalu_research.tasks import mnist


def describe_run(name, row):
    """Prints what a trained model's row says beyond the progress line: its
    state weights (and the tests with them snapped) and how it reads each
    digit alone, of the test and the training images."""
    if row["state_weights"] is not None:
        snapped = row["test_state_snapped"]
        print(
            f"{name}'s state weights, 1 - w: "
            + " ".join(f"{1 - w:.2g}" for w in row["state_weights"])
            + (
                "; snapped: "
                + ", ".join(
                    f"length {n} {cell(n, snapped[n])}" for n in sorted(snapped)
                )
                if snapped
                else ""
            ),
            flush=True,
        )
    print(f"{name} {describe_readings(row['test_digits'])}", flush=True)
    print(f"{name} {describe_fit(row['train_digits'], row['test_digits'])}", flush=True)


def describe_readings(readings):
    """One line on `digit_readings`: each digit's accuracy, the most frequent
    misreading, and the encoder's classes that more than one digit mostly
    falls in."""
    confusion = np.array(readings["confusion"])
    accuracy = ", ".join(
        f"{digit} {'-' if value is None else f'{value:.1f}'}"
        for digit, value in enumerate(readings["accuracy"])
    )
    wrong = confusion.copy()
    np.fill_diagonal(wrong, 0)
    digit, read = np.unravel_index(np.argmax(wrong), wrong.shape)
    other = "a sum outside 0-9" if read == mnist.NUM_CLASSES else str(read)
    line = f"per test digit (%): {accuracy}"
    if wrong[digit, read]:
        share = 100.0 * wrong[digit, read] / confusion[digit].sum()
        line += f"; most misread: {digit} as {other} ({share:.1f}% of the {digit}s)"
    if "channels" in readings:
        channels = np.array(readings["channels"])
        seen = channels.sum(axis=1) > 0
        main = np.where(seen, np.argmax(channels, axis=1), -1)
        shared = [
            " and ".join(str(d) for d in digits) + f" share its class {c}"
            for c in np.unique(main[seen])
            if len(digits := np.flatnonzero(main == c)) > 1
        ]
        line += "; the encoder's classes: " + (
            "; ".join(shared) if shared else "one of its own for each digit"
        )
    return line


def describe_fit(train, test):
    """One line comparing two `digit_readings`, of training images (`train`)
    and of test images (`test`): the accuracy, the error's root mean square
    and its quantiles over all their images, a fit apart from a
    generalization gap."""

    def overall(readings):
        quantiles = ", ".join(
            f"{q}% {fmt(readings['error_quantiles'][str(q)])}" for q in ERROR_QUANTILES
        )
        return (
            f"{readings['accuracy_all']:.2f}%",
            f"rms {fmt(readings['error_rms_all'])}; |error| quantiles {quantiles}",
        )

    (fit, fit_error), (tested, test_error) = overall(train), overall(test)
    return (
        f"each digit read alone: {fit} of {np.sum(train['confusion']):,} training "
        f"images (error {fit_error}), {tested} of the test images "
        f"(error {test_error})"
    )


def fmt(value):
    if value is None or not np.isfinite(value):
        return "nan" if value is not None else "-"
    if abs(value) >= 1e5:
        return f"{value:.1e}"
    return f"{value:.3g}"


def cell(length, result):
    if length == 1:
        return f"{result['accuracy']:.1f}%"
    return fmt(result["mae"])


def paper_cell(length, values):
    column = {1: 0, 10: 1, 100: 2, 1000: 3}.get(length)
    if column is None or values is None:
        return "-"
    value = values[column]
    return f"{value:.1f}%" if column == 0 else fmt(value)


def print_table(args, results, dataset_name):
    lengths = sorted(args.lengths)
    print(
        f"\n{'Counting' if args.task == 'count' else 'Addition'} on {dataset_name}: "
        "accuracy at length 1 (%), mean absolute error at the other lengths "
        f"(trained on length {args.train_length}); the paper's Table 2 "
        "(on MNIST) in brackets.\n"
    )
    rows = []
    for kind in args.models:
        paper = mnist.PAPER_TABLE_2[args.task].get(kind)
        cells = [
            f"{cell(n, results[kind]['test'][n])} ({paper_cell(n, paper)})"
            for n in lengths
        ]
        name = models.RECURRENT_MODELS[kind]
        if results[kind]["diverged"]:
            name += " (diverged)"
        rows.append([name, *cells])
        snapped = results[kind]["test_state_snapped"]
        if snapped is not None:
            rows.append(
                [
                    f"{name}, state snapped",
                    *(f"{cell(n, snapped[n])} (-)" for n in lengths),
                ]
            )
    header = ["model", *(f"length {n}" for n in lengths)]
    print("\n".join(markdown_table(header, rows)))


def plot(args, results, dataset_name, plt):
    """The error against the sequence length (log-log) and the training loss
    against the step, per model: a matplotlib figure."""
    fig, (errors, losses) = plt.subplots(1, 2, figsize=(10, 3.6))
    lengths = sorted(n for n in args.lengths if n > 1)
    for kind, result in results.items():
        label = models.RECURRENT_MODELS[kind]
        if result["diverged"]:
            label += " (diverged)"
        maes = [result["test"][n]["mae"] for n in lengths]
        (line,) = errors.plot(lengths, maes, "o-", label=label)
        colour = line.get_color()
        if (snapped := result["test_state_snapped"]) is not None:
            maes = [snapped[n]["mae"] for n in lengths]
            snapped_label = label + ", state snapped"
            errors.plot(lengths, maes, "o--", color=colour, label=snapped_label)
        steps, loss = result["epoch_steps"], result["epoch_losses"]
        losses.plot(steps, loss, ".-", color=colour, label=label)
    if lengths:
        errors.set_xscale("log")
        errors.set_yscale("log")
        errors.axvline(args.train_length, color="grey", linestyle=":", linewidth=1)
    else:
        where = {"ha": "center", "transform": errors.transAxes}
        errors.text(0.5, 0.5, "no test length above 1", **where)
    errors.set_xlabel(f"test sequence length (trained on {args.train_length})")
    errors.set_ylabel("mean absolute error")
    errors.set_title("Test error", fontsize=10)
    errors.legend(fontsize=8)
    losses.set_yscale("log")
    losses.set_xlabel("training steps")
    losses.set_ylabel("training loss (MSE, epoch mean)")
    losses.set_title("Training loss", fontsize=10)
    task = "Counting" if args.task == "count" else "Addition"
    fig.suptitle(f"{task} of {dataset_name} (seed {args.seed})")
    fig.tight_layout()
    return fig
