"""Seeds trained side by side: one Keras model whose outputs are the seeds'
models, trained by `keras_nalu.training.fit` as any model is.

Each seed's model is built right after `keras.utils.set_random_seed(seed)`,
so its initial weights are those it would have if built alone, and Adam
updates each weight elementwise, so a seed trains as it would alone (the
experiments test it). The loss is one per output, summed: each seed's
gradient is its own. First contact and number words train their seeds so.
"""

import numpy as np


def seeded(build, seeds):
    """`[build(seed) for seed in seeds]`, each called right after
    `keras.utils.set_random_seed(seed)`: each seed's model as if built
    alone."""
    import keras

    built = []
    for seed in seeds:
        keras.utils.set_random_seed(seed)
        built.append(build(seed))
    return built


def output_name(seed):
    """The name of seed `seed`'s output (its loss and metrics in the logs)."""
    return f"seed_{seed}"


def outputs_of(model, x):
    """Each seed's outputs of the side-by-side `model` on `x`, a list (a
    model of one seed may return its output alone)."""
    outputs = model(x, training=False)
    return list(outputs) if isinstance(outputs, (list, tuple)) else [outputs]


def seed_errors(seeds, data, error, metric, median=None):
    """An `Evaluation` after every epoch: for each split `(x, y)` of `data`,
    one call of the side-by-side model and each seed's
    `error(output, x, y)` (a float) under `metric(split, seed)`; with
    `median`, their median too, under `median(split)`."""
    from nalu_research.callbacks import Evaluation

    def evaluate(model):
        values = {}
        for split, (x, y) in data.items():
            outputs = outputs_of(model, x)
            errors = [error(output, x, y) for output in outputs]
            for seed, value in zip(seeds, errors, strict=True):
                values[metric(split, seed)] = value
            if median is not None:
                values[median(split)] = float(np.median(errors))
        return values

    return Evaluation(evaluate)
