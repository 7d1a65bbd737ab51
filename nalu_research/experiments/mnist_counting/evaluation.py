"""How `mnist_counting` tests a trained model, all its record keeps of it
(`model_results`): its test metrics at each length (`evaluate`), after every
epoch (`epoch_metrics`, with `--diagnostics` on training images too), how it
reads each digit alone (`digit_readings`), and its cell's state weights, as
trained and snapped (`state_weights`, `evaluate_state_snapped`)."""

import numpy as np

from nalu_research.runs import epoch_steps, mean_over_steps
from nalu_research.tasks import mnist

# Test sequences per length above 1 evaluated after every epoch: the first of
# the final evaluation's `--eval-sequences` (all of them when fewer), so that
# the per-epoch curves stay cheap at length 1000 (the recurrent part runs
# sequentially over the steps). Length 1 uses every test image either way.
EPOCH_SEQUENCES = 100
# Training images whose single-image accuracy `--diagnostics` measures, and
# the training sequences on which it compares inference and training mode.
DIAGNOSTIC_IMAGES = 10_000
DIAGNOSTIC_SEQUENCES = 500
# Percentiles of the absolute error of single images that `digit_readings`
# reports: the typical image, and the tail.
ERROR_QUANTILES = (50, 90, 99)


def model_results(args, result, encoder, head, train_data, test_data):
    """What the record keeps of a model trained (`fit_model`'s `result`,
    `encoder` and `head`): its training, its tests on `test_data` and how it
    reads single images of both sets."""
    history = result.history
    # The encoder's own classes are counted where it has them.
    channels = args.encoder_output == "log_softmax"
    # The first training images, unmoved, as `--diagnostics` reads them.
    first_train = [part[:DIAGNOSTIC_IMAGES] for part in train_data]
    return {
        # Over all the steps, as the one epoch of all the steps gave it before.
        "final_loss": mean_over_steps(args, history.get("loss", [])),
        "epoch_losses": history.get("loss", []),
        # After each epoch, at its step: the test metrics of
        # `epoch_metrics` (a subset of the sequences above length 1).
        "epoch_steps": [
            int(step) for step in np.cumsum(epoch_steps(args))[: result.epochs]
        ],
        "epoch_metrics": {k: v for k, v in history.items() if k != "loss"},
        "diverged": result.divergence,
        "state_weights": state_weights(head),
        "test": final_tests(args, encoder, head, test_data),
        # The same tests with the cell's state weights snapped, or None.
        "test_state_snapped": evaluate_state_snapped(args, encoder, head, test_data),
        "test_digits": digit_readings(args.task, encoder, head, *test_data, channels),
        "train_digits": digit_readings(
            args.task, encoder, head, *first_train, channels
        ),
    }


def evaluate(task, encoder, head, test_images, test_labels, lengths, n, seed):
    """Accuracy (%) at length 1 and mean absolute error at the other lengths."""
    embedded = encoder.predict(test_images, batch_size=1000, verbose=0)
    results = {}
    for length in lengths:
        if length == 1:  # every test image once
            read = mnist.predicted_classes(task, predict_alone(head, embedded))
            correct = read == test_labels
            results[length] = {"accuracy": 100.0 * float(np.mean(correct))}
            continue
        index = mnist.sample_sequences(len(test_labels), n, length, seed=(seed, length))
        chunk = max(1, 100_000 // length)  # sequences per prediction call
        predictions = np.concatenate(
            [
                head.predict(embedded[index[i : i + chunk]], verbose=0)
                for i in range(0, n, chunk)
            ]
        )
        errors = predictions - mnist.sequence_targets(task, test_labels[index])
        results[length] = {
            "mae": float(np.mean(np.abs(errors))),
            "mse": float(np.mean(np.square(errors))),
        }
    return results


def final_tests(args, encoder, head, test_data):
    """The final test metrics (`evaluate`): every test image at length 1,
    `--eval-sequences` test sequences of each longer length of `--lengths`."""
    lengths, n = args.lengths, args.eval_sequences
    return evaluate(args.task, encoder, head, *test_data, lengths, n, args.seed)


def predict_alone(head, embedded):
    """What `head` predicts from each embedded image alone (a sequence of
    one)."""
    return head.predict(embedded[:, None], batch_size=1000, verbose=0)


def digit_readings(task, encoder, head, images, labels, channels):
    """How each digit's images are read alone (length 1).

    `confusion`, a row per true digit of `NUM_CLASSES + 1` counts (the class
    read, then any other reading: a sum below 0 or above 9, or none for a
    non-finite prediction); `accuracy`, % per digit (None for a digit
    without images) and `accuracy_all`, % of all the images. The error is
    the prediction minus the image's own target (`sequence_targets` of one
    image: the digit, or its one-hot count), on the finite predictions:
    `error_mean` and `error_rms` per digit (None for a digit without any;
    for the sum, whether a digit is misread by a bias or by a spread; for
    counting, the mean is that of the ten counts), `error_rms_all` over all
    the images, and `error_quantiles`, the `ERROR_QUANTILES` (%) of the
    absolute error (averaged over the outputs) over all the images: whether
    a spread is every image's or a few's (None without finite predictions).
    With `channels` (the encoder's output is its own 10-way log-softmax,
    whose classes no label names), `channels`, a row per true digit of 10
    counts, its images' most probable class of the encoder: whether the
    encoder classifies the digits, one class each.
    """
    classes_n = mnist.NUM_CLASSES
    embedded = encoder.predict(images, batch_size=1000, verbose=0)
    predictions = predict_alone(head, embedded)
    read = mnist.predicted_classes(task, predictions)
    read = np.where((read >= 0) & (read < classes_n), read, classes_n)
    confusion = np.zeros((classes_n, classes_n + 1), np.int64)
    np.add.at(confusion, (labels, read), 1)
    totals = confusion.sum(axis=1)
    errors = np.asarray(predictions, np.float64) - mnist.sequence_targets(
        task, labels[:, None]
    )
    finite = np.all(np.isfinite(errors), axis=-1)
    errors, finite_labels = errors[finite], labels[finite]

    def rms(values):
        return float(np.sqrt(np.mean(values**2))) if values.size else None

    own = [errors[finite_labels == digit] for digit in range(classes_n)]
    absolute = np.mean(np.abs(errors), axis=-1)
    readings = {
        "confusion": confusion.tolist(),
        "accuracy": [
            100.0 * float(right) / total if total else None
            for right, total in zip(np.diagonal(confusion), totals, strict=True)
        ],
        "accuracy_all": 100.0 * float(np.trace(confusion)) / len(labels),
        "error_mean": [float(np.mean(e)) if e.size else None for e in own],
        "error_rms": [rms(e) for e in own],
        "error_rms_all": rms(errors),
        "error_quantiles": {
            str(q): float(np.percentile(absolute, q)) if absolute.size else None
            for q in ERROR_QUANTILES
        },
    }
    if channels:
        counts = np.zeros((classes_n, embedded.shape[-1]), np.int64)
        np.add.at(counts, (labels, np.argmax(embedded, axis=-1)), 1)
        readings["channels"] = counts.tolist()
    return readings


def epoch_metrics(args, parts, test_data, train_data):
    """The test metrics after an epoch: `length_1_accuracy` (%, every test
    image) and `length_N_mae` on the first `EPOCH_SEQUENCES` test sequences
    of each longer length N; with `--diagnostics` also those of
    `training_diagnostics` on `train_data` (images, labels)."""
    n = min(args.eval_sequences, EPOCH_SEQUENCES)
    encoder, head = parts["encoder"], parts["head"]
    test = evaluate(args.task, encoder, head, *test_data, args.lengths, n, args.seed)
    metrics = {
        f"length_{length}_{name}": value
        for length, result in sorted(test.items())
        for name, value in result.items()
        if name != "mse"
    }
    if args.diagnostics:
        metrics.update(training_diagnostics(args, parts, *train_data))
    return metrics


def training_diagnostics(args, parts, train_images, train_labels):
    """What `--diagnostics` adds to an epoch's metrics, on training images
    (unmoved): `train_length_1_accuracy` (%, the first `DIAGNOSTIC_IMAGES`),
    and the mean squared error on `DIAGNOSTIC_SEQUENCES` sequences of
    `--train-length` of them with the encoder in inference mode
    (`train_length_N_mse`) and in training mode, its dropout on
    (`train_length_N_mse_dropout`, what the training loss measures)."""
    import keras

    encoder, head = parts["encoder"], parts["head"]
    first = slice(DIAGNOSTIC_IMAGES)
    single = evaluate(
        args.task, encoder, head, train_images[first], train_labels[first], [1], 1, 0
    )
    metrics = {"train_length_1_accuracy": single[1]["accuracy"]}
    length = args.train_length
    index = mnist.sample_sequences(
        len(train_labels), DIAGNOSTIC_SEQUENCES, length, seed=(args.seed, length)
    )
    images = train_images[index.reshape(-1)]
    targets = mnist.sequence_targets(args.task, train_labels[index])
    # The dropout's random state, put back after: the diagnostics leave the
    # run's own dropout masks (its results) as they were.
    states = [
        (v, keras.ops.convert_to_numpy(v)) for v in encoder.non_trainable_variables
    ]
    for suffix, training in (("", False), ("_dropout", True)):
        embedded = np.concatenate(
            [
                keras.ops.convert_to_numpy(
                    encoder(images[i : i + 1000], training=training)
                )
                for i in range(0, len(images), 1000)
            ]
        ).reshape(DIAGNOSTIC_SEQUENCES, length, -1)
        errors = head.predict(embedded, verbose=0) - targets
        metrics[f"train_length_{length}_mse{suffix}"] = float(np.mean(errors**2))
    for variable, value in states:
        variable.assign(value)
    return metrics


# The weights a cell carries its state with, snapped after training for the
# table's "state snapped" row.
SNAPPED_STATE = "recurrent_kernel"


def recurrent_cell(head):
    """The cell of a head's `keras.layers.RNN`."""
    import keras

    (cell,) = [
        layer.cell for layer in head.layers if isinstance(layer, keras.layers.RNN)
    ]
    return cell


def state_weights(head):
    """The `state_weights` of a head's `NACCell` or `NAUCell` (each unit's
    weight on its own state: a running count or sum is exact over any length
    only where they are exactly 1), as a list; None for the other heads."""
    import keras

    cell = recurrent_cell(head)
    if not hasattr(cell, "state_weights"):
        return None
    return [float(w) for w in keras.ops.convert_to_numpy(cell.state_weights)]


def evaluate_state_snapped(args, encoder, head, test_data):
    """The final test metrics (`final_tests`) of `head` with its cell's state
    weights snapped (`cell.snap(["recurrent_kernel"])`: each to the nearest of
    its exact values, so a weight of 1 - 3e-5 carries a running count or sum
    exactly over any length) and its input weights as trained; None for a
    cell whose state weights do not snap apart (the NACCell's are rows of its
    one kernel; the LSTM has none). The head's weights are put back after."""
    import keras

    cell = recurrent_cell(head)
    if SNAPPED_STATE not in getattr(cell, "exact_values", {}):
        return None
    state = cell.unit_weights()[SNAPPED_STATE]
    trained = keras.ops.convert_to_numpy(state)
    cell.snap([SNAPPED_STATE])
    try:
        return final_tests(args, encoder, head, test_data)
    finally:
        state.assign(trained)
