"""Number words to numbers (Trask et al. 2018, Section 4.3, Table 3, Figure 3).

English number expressions of 0 to 999 ("five hundred and fifteen") are
translated into numbers (515). The paper's split: 169 training numbers (0-19
and a random sample covering every token), 200 validation, 631 test. The
models (`nalu_research.models.number_words`, `--readout`) read a number out of
each token; the loss is on the last token's (`--targets prefix`: on every
token's, against the value of the words so far), the others are Figure 3's view.

Model selection as in Appendix D: layer size {16, 32} x learning rate {0.01,
0.001}, Adam on the whole training set, several seeds each. A configuration is
chosen by its median validation MAE over the seeds; within a run the weights
of its best validation MAE (checked every `--eval-every` steps) are kept.
Budget: 5,000 full-batch steps per run by default (the paper trained 300,000);
a configuration's seeds train side by side in one Keras model, which gives
each exactly the updates it would get alone. Prints Table 3 (the chosen
configuration's median over seeds, each seed's numbers too) beside the
paper's, the Figure 3 view from the best model, and exports that model as a
SavedModel that takes a batch of strings.

Writes every run's errors and validation curve as JSON (`--json`), a PNG beside
it (`--png`: the chosen configurations' validation MAE over training, Figure
3), a progress line per evaluation and per configuration, and with
`--tensorboard DIR` the loss and the MAEs. Every `--eval-every` steps is an
epoch, checkpointed with the best weights so far: the same command resumes an
interrupted run to an uninterrupted run's results. `--strategy
mirrored|multi-worker` trains on the local devices or the hosts of `TF_CONFIG`.

    python examples/number_words.py
    python examples/number_words.py --quick   # a smoke run
"""

import itertools
import time

import numpy as np

from nalu_research import side_by_side
from nalu_research.arguments import (
    RUN_OPTIONS,
    Shared,
    check_eval_every,
    positive_float,
    positive_int,
)
from nalu_research.arguments import learning_rate as scheduled
from nalu_research.experiment import Experiment, Session
from nalu_research.experiments.number_words import report
from nalu_research.runs import steps_per_execution
from nalu_research.serving import Export
from nalu_research.tasks.number_words import (
    MODELS,
    PAPER_FIGURE_3,
    READOUT_KINDS,
    TARGETS,
    TOKEN_VALUES,
    NumberWords,
    served_check,
    served_phrases,
)


def mae(model, ids, y):
    import keras

    prediction = keras.ops.convert_to_numpy(model(ids, training=False))
    return float(np.mean(np.abs(prediction.astype(np.float64) - y)))


def lone_word_errors(model, data, after_lone):
    """The test MAE split in two (`NumberWords.after_lone_words`): on the
    phrases that use a word training shows only alone (`"test_lone"`) and
    on the others (`"test_other"`), each with its count of phrases
    (`"test_lone_count"`, `"test_other_count"`). A part with no phrase (a
    split whose training set uses every word beside others) has no error:
    None, with its count 0, not NaN (which would read as a divergence)."""
    ids, y = data["test"]
    errors = {}
    for key, rows in (("test_lone", after_lone), ("test_other", ~after_lone)):
        errors[key] = mae(model, ids[rows], y[rows]) if rows.any() else None
        errors[f"{key}_count"] = int(rows.sum())
    return errors


def evaluated(args):
    """The splits evaluated during training: validation alone (it selects
    the weights kept and the configuration; the test split is read once, at
    the end), with `--log-test` the test split too."""
    return ("validation", "test") if args.log_test else ("validation",)


def seed_errors(seeds, data, splits=("validation",)):
    """`Evaluation`: each seed's MAE on `splits` (`metric`),
    from one call of the side-by-side model (one output per seed)."""
    import keras

    from nalu_research.layers import LastToken
    from nalu_research.models.number_words import metric

    def error(output, ids, y):
        if len(output.shape) == 2:  # every token's (`--targets prefix`)
            output = LastToken()([output, ids])
        prediction = keras.ops.convert_to_numpy(output).astype(np.float64)
        return float(np.mean(np.abs(prediction - y)))

    splits = {split: data[split] for split in splits}
    return side_by_side.seed_errors(seeds, splits, error, metric)


def train_config(
    kind, size, learning_rate, seeds, data, args, session=None, train_targets=None
):
    """Trains one model per seed; returns `[(errors, seed, steps_model,
    model), ...]`.

    The loss reads the last token's prediction against `data["train"]`'s
    numbers, or with `args.targets == "prefix"` every token's against
    `train_targets` (`NumberWords.prefix_targets`, `per_token_loss`).

    The seeds' models train side by side in one Keras model whose loss is the
    sum of theirs: no weight is shared, so each gets exactly the gradients and
    Adam updates it would get alone, in a third of the time. Training runs in
    epochs of `args.eval_every` full-batch steps, each checkpointed in the
    configuration's folder of `session` (none without one: `Session(args)`)
    and followed by the seeds' validation and test MAE (`seed_errors`:
    printed with the loss and, for several seeds, each one's
    `seed_<seed>_loss`; kept as `errors["curves"]` at the steps
    `errors["steps"]`; written to TensorBoard with `--tensorboard`). A
    non-finite loss of any seed stops them all there (`errors["diverged"]`
    says where); each keeps its best weights.
    """
    import keras
    import tensorflow as tf

    from nalu_research.models.number_words import (
        KeepBest,
        build_side_by_side,
        metric,
        model_name,
        per_token_loss,
    )

    session = session or Session(args)
    keep = KeepBest(seeds, args.eval_every)
    built = {}
    # One seed: a model of one output, not of a list of one, which the custom
    # loop of a multi-worker strategy (distribute.Trainer) does not take.
    alone = len(seeds) == 1
    options = (args.embedding_size, args.readout, args.targets, args.token_values)

    def build():
        model, built["models"] = build_side_by_side(kind, size, seeds, *options)
        keep.watch([model for _, model in built["models"]])
        return model

    prefix = args.targets == "prefix"
    x, y = data["train"][0], train_targets if prefix else data["train"][1]
    targets = y if alone else (y,) * len(seeds)
    loss = per_token_loss(args.loss) if prefix else args.loss

    def batches(epoch):  # the whole training set at every step
        dataset = tf.data.Dataset.from_tensors((x, targets))
        return dataset.repeat(args.eval_every)

    config = {
        "model": kind,
        "size": size,
        "learning_rate": learning_rate,
        "run_seeds": list(seeds),
        **{k: v for k, v in vars(args).items() if k not in IGNORED},
    }
    parts = (kind, size, f"{learning_rate:g}")
    evaluation = seed_errors(seeds, data, evaluated(args))
    result = session.fit(
        *parts,
        what=f"{model_name(kind, args.readout)}, size {size}, lr {learning_rate:g}",
        model_fn=build,
        data_fn=batches,
        loss=loss if alone else [loss] * len(seeds),
        optimizer_fn=lambda: keras.optimizers.Adam(
            scheduled(learning_rate, args.learning_rate_drop)
        ),
        epochs=max(1, args.steps // args.eval_every),
        config=config,
        callbacks=[evaluation, keep, *session.callbacks(*parts)],
        steps_per_execution=steps_per_execution(args.eval_every),
    )
    keep.restore()
    runs = []
    models = built["models"]
    steps = [(epoch + 1) * args.eval_every for epoch in range(result.epochs)]
    for i, (seed, (steps_model, model)) in enumerate(zip(seeds, models, strict=True)):
        errors = {split: mae(model, *data[split]) for split in data}
        errors["best_step"] = keep.best_step[i]
        errors["diverged"] = result.divergence
        errors["steps"] = steps
        errors["curves"] = {
            split: result.history[metric(split, seed)] for split in evaluated(args)
        }
        runs.append((errors, seed, steps_model, model))
    return runs


# Arguments that do not change a run's results: a checkpoint resumes across them.
IGNORED = (
    *"seeds sizes learning_rates models quick log_test".split(),
    *"export_dir no_export json png".split(),
    *RUN_OPTIONS,
)


def lowest_validation(runs):
    """The validation MAE of `runs` (`[(errors, ...), ...]`) that the choice
    of a configuration and of the best run ranks, NaN last."""
    return [np.nan_to_num(run[0]["validation"], nan=np.inf) for run in runs]


class NumberWordsExperiment(Experiment):
    # Its --help description: the module docstring's first paragraph.

    arguments = {
        "models": Shared(
            None,
            choices=list(MODELS),
            help="default: the LSTM and every unit the --readout has",
        ),
        "seed": Shared(0, help="fixes the split (default %(default)s)"),
        "seeds": Shared(3, help="runs per configuration (default %(default)s)"),
        "steps": 5000,
        "eval_every": 500,
        "learning_rate_drop": None,
    }
    record_path = "results/number_words.json"
    checkpoints = True
    export_path = "saved_models/number_words"
    run_unit = "configuration"

    def add_arguments(self, parser):
        parser.add_argument(
            "--sizes",
            type=positive_int,
            nargs="+",
            default=[16, 32],
            help="LSTM sizes (the embedding's with --readout pairs)",
        )
        parser.add_argument(
            "--embedding-size",
            type=positive_int,
            default=None,
            help="the token embedding's size (default: the LSTM's, as the paper's "
            "grid; the authors told Madsen & Johansen about 256, with an LSTM of 10)",
        )
        parser.add_argument(
            "--learning-rates", type=positive_float, nargs="+", default=[0.01, 0.001]
        )
        parser.add_argument("--loss", default="mae", choices=["mae", "mse"])
        parser.add_argument(
            "--readout",
            default="step",
            choices=list(READOUT_KINDS),
            help="how the NAC or NALU reads the LSTM: 'step', on each step's "
            "output; 'recurrent', as a recurrent cell with its previous "
            "prediction as one more input (stable-nalu's reading); 'two-layer', "
            "on each step's output through a hidden layer of the same unit, as "
            "wide as the LSTM; 'configured' (NALU only), a running value that a "
            "NALU configured by the LSTM (Section 4.4's cell) updates with a "
            "learned number per token; 'pairs', not the paper's model: no LSTM, "
            "the sum of a NAC or NALU over each pair of adjacent words' "
            "embeddings (the last word paired with the end), --sizes being the "
            "embedding's",
        )
        parser.add_argument(
            "--targets",
            default="last",
            choices=TARGETS,
            help="what the loss reads: 'last', the last token's prediction against "
            "the number; 'prefix', every token's against the value of the words "
            "read so far (Figure 3's trace)",
        )
        parser.add_argument(
            "--token-values",
            default="log",
            choices=TOKEN_VALUES,
            help="the configured readout's number per token: 'log', exp of a "
            "learned embedding of width 1 (moved by a factor per Adam step); "
            "'linear', the embedding itself (moved by about the learning rate "
            "per step)",
        )
        parser.add_argument(
            "--log-test",
            action="store_true",
            help="also evaluate the test split during training (its MAE in the "
            "log, TensorBoard and curves); by default it is read once, at the end, "
            "after validation chose the weights and configuration",
        )
        parser.add_argument(
            "--quick",
            action="store_true",
            help="a smoke run: 1 seed, size 16, lr 0.01, 40 steps",
        )

    def check_arguments(self, args, parser):
        if args.quick:
            args.seeds, args.steps, args.eval_every = 1, 40, 20
            args.sizes, args.learning_rates = [16], [0.01]
        check_eval_every(args, parser)
        if args.learning_rate_drop and args.learning_rate_drop[0] >= args.steps:
            parser.error(
                f"--learning-rate-drop STEP must be below --steps ({args.steps}), "
                f"got {args.learning_rate_drop[0]}"
            )
        if args.readout == "pairs" and args.embedding_size is not None:
            parser.error(
                "--embedding-size has no use with --readout pairs, whose --sizes "
                f"are the embedding's; got --embedding-size {args.embedding_size}"
            )
        if args.models is None:
            args.models = ["lstm", *READOUT_KINDS[args.readout]]
        for key in args.models:
            if key != "lstm" and key not in READOUT_KINDS[args.readout]:
                parser.error(
                    f"--models {key} has no --readout {args.readout}: it reads "
                    f"{', '.join(READOUT_KINDS[args.readout])} only"
                )

    def prepare(self, args, session):
        self.task = task = NumberWords(seed=args.seed)
        self.data = {split: task.split(split)[1:] for split in report.SPLITS}
        self.train_targets = task.prefix_targets("train")
        self.after_lone = task.after_lone_words("test")
        self.seeds = list(range(args.seed + 1, args.seed + 1 + args.seeds))
        print(report.describe(args, self.data, self.seeds), flush=True)
        self.trained, self.served_check = {}, None

    def runs(self, args):
        return list(itertools.product(args.models, args.sizes, args.learning_rates))

    def train(self, args, run, session):
        """Trains a configuration's seeds side by side (`train_config`); its
        row: each seed's errors."""
        from nalu_research.models.number_words import model_name

        key, size, rate = run
        name = model_name(key, args.readout)
        print(f"{name}, size {size}, lr {rate:g}, seeds {self.seeds}:", flush=True)
        start = time.perf_counter()
        runs = train_config(
            key, size, rate, self.seeds, self.data, args, session, self.train_targets
        )
        seconds_each = (time.perf_counter() - start) / len(self.seeds)
        after_lone = self.after_lone
        for errors, seed, _, model in runs:
            errors["seconds"] = seconds_each
            errors.update(lone_word_errors(model, self.data, after_lone))
            print(
                f"{name}, size {size}, lr {rate:g}, seed {seed}: "
                f"train {errors['train']:.3f}, validation "
                f"{errors['validation']:.3f}, test {errors['test']:.3f} "
                f"MAE (best at step {errors['best_step']}; test "
                f"{report.g3(errors['test_lone'])} on the {after_lone.sum()} "
                f"phrases after lone words, {report.g3(errors['test_other'])} "
                "on the others)" + (" (diverged)" if errors["diverged"] else ""),
                flush=True,
            )
        self.trained[run] = runs
        return {
            "model": name,
            "size": size,
            "learning_rate": rate,
            "runs": [dict(errors, seed=seed) for errors, seed, *_ in runs],
        }

    def progress(self, row):
        return {
            "median validation MAE": np.median([r["validation"] for r in row["runs"]])
        }

    def run_name(self, run, row):
        return f"{row['model']}, size {row['size']}, lr {row['learning_rate']:g}" + (
            ", diverged" if row["runs"][0]["diverged"] else ""
        )

    def report(self, args, rows):
        import keras

        from nalu_research.models.number_words import model_name

        seconds = self.elapsed()
        # Each model's configuration of the lowest median validation MAE over
        # the seeds, and the best run of them all.
        self.chosen, best = {}, None
        for (key, size, rate), runs in self.trained.items():
            name = model_name(key, args.readout)
            chosen = self.chosen.get(name)
            median = np.median(lowest_validation(runs))
            if chosen is None or median < np.median(lowest_validation(chosen[2])):
                self.chosen[name] = (size, rate, runs)
        for name, (_, _, runs) in self.chosen.items():
            top = runs[int(np.argmin(lowest_validation(runs)))]
            if best is None or top[0]["validation"] < best[0][0]["validation"]:
                best = (top, name)
        report.print_table_3(args, self.chosen)
        report.print_lone_word_errors(self.task, self.after_lone, self.chosen)
        print(
            f"\nTrained {len(rows) * len(self.seeds)} runs in {seconds:.0f} s on "
            f"the {keras.backend.backend()} backend."
        )
        (_, seed, steps_model, self.model), name = best
        self.figure_model = f"{name}, seed {seed}"
        self.figure = report.figure_3(steps_model, self.figure_model)

    def exports(self, args, rows):
        """The best model as a SavedModel of strings (`text_model`), served
        on `SERVED_PHRASES` and the `served_phrases` test phrases."""
        import keras

        from nalu_research.models.number_words import text_model

        if keras.backend.backend() != "tensorflow":
            print(
                f"No SavedModel export on the {keras.backend.backend()} backend: "
                "the served model tokenizes its strings with TextVectorization, "
                "in TensorFlow's graph; add --backend tensorflow to export it."
            )
            return []
        sample = list(PAPER_FIGURE_3) + ["five hundred and fifteen", "zero", "zzz", ""]
        return [
            Export(
                "",
                text_model(self.model),
                np.array(SERVED_PHRASES + served_phrases()),
                sample=np.array(sample),
            )
        ]

    def served(self, args, served):
        (export,) = served.values()
        value, valid = (export["served"][k] for k in ("value", "valid"))
        shown = len(SERVED_PHRASES)
        print(
            f"Exported the best model ({self.figure_model}) to {export['path']}/ "
            f"(verified); tf.saved_model.load(path).serve({SERVED_PHRASES}): value "
            f"{np.round(value[:shown], 2).tolist()}, valid {valid[:shown]}"
        )
        self.served_check = served_check(value[shown:], valid[shown:])
        report.print_served_check(self.served_check)
        if args.readout != "pairs":
            print(
                "This is the paper's model. The model the docs recommend (a NALU over "
                f"word pairs) is exported by: {RECOMMENDED}"
            )
        return None  # the record keeps `served_check`

    def record(self, args, rows):
        results = {}
        for row in rows:
            configs = results.setdefault(row["model"], {})
            configs[f"size {row['size']}, lr {row['learning_rate']:g}"] = row["runs"]
        return {
            "runs": results,
            "chosen": {n: [s, r] for n, (s, r, _) in self.chosen.items()},
            "figure_3": self.figure,
            "figure_3_model": self.figure_model,
            "served_check": self.served_check,
        }

    def plot(self, args, rows, plt):
        return report.plot(self.chosen, self.figure, self.figure_model, plt)


# The phrases whose served values the export prints.
SERVED_PHRASES = ["five hundred and fifteen", "nine", "zzz"]
# The command that trains and exports the model the docs recommend.
RECOMMENDED = (
    "python examples/number_words.py --readout pairs --models nalu "
    "--sizes 16 --learning-rates 0.01 --seeds 10 --steps 30000 --eval-every 1000 "
    "--loss mse --learning-rate-drop 20000 0.1"
)


def main(argv=None):
    return NumberWordsExperiment().main(argv)
