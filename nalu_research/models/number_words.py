"""The models of the number-words experiment (Trask et al. 2018, Section 4.3).

Every model embeds the tokens of a phrase, encodes them with one LSTM and
reads a number out of each step's LSTM output (`build_branch`): the
summed-states LSTM of Appendix D (a linear readout of the sum of the states so
far), a NAC or a NALU. Other readings of the text (`READOUTS`): "recurrent"
makes the NAC or NALU a recurrent cell with its previous prediction as one
more input (as Madsen & Johansen's stable-nalu builds the task), "two-layer"
reads each step through two layers of the unit (a hidden one as wide as the
LSTM, as the paper's Section 4.1 stacks them), "configured" keeps a running
value that a NALU configured by the LSTM updates with a learned number per
token (the paper's Section 4.4 cell). "pairs" is not the paper's model: no
LSTM, a NAC or NALU reads each pair of adjacent words' embeddings (the last
word paired with the end of the phrase) and the number is the sum of its
outputs, `y = sum_i NALU([e_i; e_i+1])`, the model of the public
re-implementations that report a test MAE below 1 (kerryeon/nalu,
nkarasovd/Neural_Arithmetic_Logic_Units). Seeds train side by side
(`build_side_by_side`, `KeepBest`); the served model reads strings (`text_model`).

Example:

>>> from nalu_research.models import number_words
>>> ((steps, model),) = number_words.build_models("nalu", 4, [0])
>>> steps.output.shape, model.output.shape  # every token's, the last token's
((None, None), (None,))
"""

import keras
import numpy as np

from keras_nalu import NAC, NALU, NACCell, NALUCell
from nalu_research.layers import (
    CheckedTokens,
    LastToken,
    LSTMConfiguredNALUCell,
    NextTokens,
    SummedStates,
)
from nalu_research.side_by_side import output_name, seeded
from nalu_research.tasks.number_words import (  # noqa: F401 (its names)
    LARGEST,
    MAX_LENGTH,
    MODELS,
    READOUT_KINDS,
    TARGETS,
    TOKEN_VALUES,
    VOCABULARY,
    model_name,
    number_to_words,
)


# How the NAC or NALU reads the LSTM (`--readout`, the kinds of each:
# `READOUT_KINDS`): each readout's layer (or layer factory) per kind.
def _readout(readout, kind):
    if readout == "recurrent":
        cell = {"nac": NACCell, "nalu": NALUCell}[kind]
        return lambda units: keras.layers.RNN(cell(units), return_sequences=True)
    if readout == "configured":
        return LSTMConfiguredNALUCell
    return {"nac": NAC, "nalu": NALU}[kind]


READOUTS = {
    readout: {kind: _readout(readout, kind) for kind in kinds}
    for readout, kinds in READOUT_KINDS.items()
}


def build_branch(
    ids, kind, size, embedding_size=None, readout="step", token_values="log"
):
    """Per-token predictions `(batch, T)` of one model on token `ids`: an
    embedding of `embedding_size` (default `size`), an LSTM of `size`, and
    the `readout` (`READOUTS`) of a NAC or NALU (the LSTM's is always the
    linear readout of its summed states); `"two-layer"` puts a layer of
    `size` of the same unit before it; with `"configured"` the LSTM is the
    controller of an `LSTMConfiguredNALUCell` whose numbers are a second
    embedding, of width 1, read as it is (`token_values="linear"`) or through
    `exp` (`"log"`, `TOKEN_VALUES`); with `"pairs"` there is no LSTM: a
    unit reads each token's embedding (of `embedding_size`, default `size`)
    beside the next token's (the padding's, id 0, after the last token) and
    the prediction at a token is the sum of the unit's outputs so far."""
    # No mask: padding follows the last token, which the loss reads, and
    # SummedStates masks it out itself.
    embed = keras.layers.Embedding(len(VOCABULARY) + 2, embedding_size or size)
    if kind != "lstm" and readout == "pairs":
        pairs = keras.layers.Concatenate()([embed(ids), embed(NextTokens()(ids))])
        prediction = SummedStates()([READOUTS[readout][kind](1)(pairs), ids])
        return keras.layers.Reshape((-1,))(prediction)
    x = embed(ids)
    if kind != "lstm" and readout == "configured":  # the LSTM is the controller
        values = keras.layers.Embedding(len(VOCABULARY) + 2, 1)(ids)
        if token_values == "log":
            values = keras.layers.Activation("exponential")(values)
        cell = READOUTS[readout][kind](1, size)
        prediction = keras.layers.RNN(cell, return_sequences=True)(
            keras.layers.Concatenate()([values, x])
        )
        return keras.layers.Reshape((-1,))(prediction)
    h = keras.layers.LSTM(size, return_sequences=True)(x)
    if kind == "lstm":
        prediction = keras.layers.Dense(1)(SummedStates()([h, ids]))
    else:
        unit = READOUTS[readout][kind]
        if readout == "two-layer":
            h = unit(size)(h)
        prediction = unit(1)(h)
    return keras.layers.Reshape((-1,))(prediction)


def per_token_loss(kind):
    """The loss of `--targets prefix`: `kind` ("mae" or "mse") between each
    token's prediction and target, averaged over a phrase's tokens (its
    targets are NaN after its last word, `NumberWords.prefix_targets`)."""

    def loss(y_true, y_pred):
        ops = keras.ops
        valid = ops.logical_not(ops.isnan(y_true))
        error = ops.where(valid, y_pred - ops.where(valid, y_true, 0.0), 0.0)
        error = ops.abs(error) if kind == "mae" else ops.square(error)
        return ops.sum(error, axis=-1) / ops.sum(ops.cast(valid, error.dtype), axis=-1)

    loss.__name__ = f"per_token_{kind}"
    return loss


def build_models(
    kind, size, seeds, embedding_size=None, readout="step", token_values="log"
):
    """One model per seed, each initialized as if built alone after
    `keras.utils.set_random_seed(seed)`: `[(steps_model, model), ...]`, token
    ids -> per-token predictions and -> the last token's (the one trained)."""
    ids = keras.Input((None,), dtype="int32", name="ids")

    def build(seed):
        steps = build_branch(ids, kind, size, embedding_size, readout, token_values)
        last = LastToken(name=output_name(seed))([steps, ids])
        return (
            keras.Model(ids, steps, name=f"{kind}_steps_{seed}"),
            keras.Model(ids, last, name=f"{kind}_{seed}"),
        )

    return seeded(build, seeds)


def build_side_by_side(
    kind,
    size,
    seeds,
    embedding_size=None,
    readout="step",
    targets="last",
    token_values="log",
):
    """`(model, models)`: the model that trains the seeds' models side by side
    (token ids -> each seed's predictions, a list of them, or one for one
    seed: the last token's `(batch,)` with `targets="last"`, every token's
    `(batch, T)` with `"prefix"`) and `build_models(kind, size, seeds,
    embedding_size, readout, token_values)`."""
    models = build_models(kind, size, seeds, embedding_size, readout, token_values)
    ids = models[0][1].inputs[0]
    if targets == "prefix":  # named as the last token's, for the logs
        outputs = [
            keras.layers.Identity(name=output_name(seed))(steps.outputs[0])
            for seed, (steps, _) in zip(seeds, models, strict=True)
        ]
    else:
        outputs = [model.outputs[0] for _, model in models]
    return keras.Model(ids, outputs[0] if len(seeds) == 1 else outputs), models


def metric(split, seed):
    """The name of a seed's MAE on `split` in the epoch's logs (and the
    TensorBoard tag): `validation_mae/seed_1`."""
    return f"{split}_mae/{output_name(seed)}"


class KeepBest(keras.callbacks.Callback):
    """After every epoch (`eval_every` steps), keeps each seed's weights of its
    best validation MAE, read from the epoch's logs (`seed_errors`, which
    comes before it in the callbacks); `restore()` puts them back when
    training is done.

    Its state goes into the run's checkpoint (`get_checkpoint_state`), so a
    resumed run keeps the weights and steps an uninterrupted one would.
    """

    def __init__(self, seeds, eval_every):
        super().__init__()
        self.seeds, self.eval_every = list(seeds), eval_every
        self.watch([])

    def watch(self, models):
        """Starts keeping the best weights of `models` (the seeds' models)."""
        self.models = models
        self.best = [np.inf] * len(models)
        self.best_weights = [None] * len(models)
        self.best_step = [0] * len(models)

    def on_epoch_end(self, epoch, logs=None):
        step = (epoch + 1) * self.eval_every
        for i, model in enumerate(self.models):
            error = logs[metric("validation", self.seeds[i])]
            if np.isfinite(error) and error < self.best[i]:
                self.best[i], self.best_step[i] = error, step
                self.best_weights[i] = model.get_weights()

    def restore(self):
        for model, weights in zip(self.models, self.best_weights, strict=True):
            if weights is not None:
                model.set_weights(weights)

    def get_checkpoint_state(self):
        state = {
            "best": np.array(self.best, np.float64),
            "best_step": np.array(self.best_step, np.int64),
        }
        for i, weights in enumerate(self.best_weights):
            for j, weight in enumerate(weights or []):
                state[f"weights_{i}_{j}"] = weight
        return state

    def set_checkpoint_state(self, state):
        self.best = [float(v) for v in state["best"]]
        self.best_step = [int(v) for v in state["best_step"]]
        for i, model in enumerate(self.models):
            if f"weights_{i}_0" in state:
                self.best_weights[i] = [
                    state[f"weights_{i}_{j}"] for j in range(len(model.weights))
                ]


def normalize_phrases(text):
    """Strings as people type them -> the spelling the model was trained on.

    Lower case; hyphens and other punctuation as spaces ("forty-two"); runs
    of spaces as one, none at the ends; "a hundred" as "one hundred"; and
    the British "and" after "hundred" where a number follows without it
    ("five hundred eleven" -> "five hundred and eleven"). In TensorFlow's
    graph, so that a client of the SavedModel gets the same.

    Example:

    >>> import numpy as np
    >>> from nalu_research.models.number_words import normalize_phrases
    >>> [t.decode() for t in normalize_phrases(np.array(
    ...     ["  Forty-Two ", "a hundred five", "nine hundred and ninety-nine"]
    ... )).numpy()]
    ['forty two', 'one hundred and five', 'nine hundred and ninety nine']
    """
    import tensorflow as tf

    text = tf.strings.lower(text)
    text = tf.strings.regex_replace(text, r"[^a-z]+", " ")
    text = tf.strings.strip(text)
    text = tf.strings.regex_replace(text, r"^a hundred\b", "one hundred")
    # RE2 has no lookahead: add "and" after every "hundred" followed by a
    # word, then take back the doubled one.
    text = tf.strings.regex_replace(text, r"hundred ([a-z])", r"hundred and \1")
    return tf.strings.regex_replace(text, r"hundred and and ", "hundred and ")


@keras.saving.register_keras_serializable(
    package="nalu_research", name="NormalizePhrases"
)
class NormalizePhrases(keras.layers.Layer):
    """`normalize_phrases` as a layer of the served model: strings in, strings
    out (TensorFlow only, as `TextVectorization`)."""

    def call(self, inputs):
        return normalize_phrases(inputs)

    def compute_output_spec(self, inputs):
        return keras.KerasTensor(inputs.shape, dtype="string")


def text_model(model):
    """The served model: a batch of strings -> a dict that says which were read.

    `model` maps token ids `(batch, T)` to the last token's prediction
    `(batch,)` (`build_models`). The strings are normalized and tokenized
    inside the graph (`normalize_phrases`, then `TextVectorization` over
    `VOCABULARY`: 0 pads, 1 is an unknown word), checked by `CheckedTokens`
    and against the grammar (the 1,000 spellings). Outputs, each of shape
    `(batch,)`:

    - `value`: float32, the prediction, NaN when the phrase is not valid;
    - `valid`: bool, the phrase, normalized (`normalize_phrases`: case,
      hyphens, spaces, "a hundred", an optional "and"), spells a number of
      0-999;
    - `tokens`: int32, the words of the phrase;
    - `unknown_tokens`: int32, its words outside `VOCABULARY`.

    `model` reads at most `MAX_LENGTH` tokens and one padding step: a phrase
    of 500 words costs it no more than a valid one, a batch of empty phrases
    still runs, and a valid phrase gets the prediction `model` gives its ids.

    Example:

    >>> from nalu_research.models.number_words import (
    ...     build_models, text_model)
    >>> ((_, model),) = build_models("nalu", 4, [0])
    >>> out = text_model(model)(np.array(["nine", "zzz qqq", ""]))
    >>> {k: keras.ops.convert_to_numpy(out[k]).tolist()
    ...  for k in ("valid", "tokens", "unknown_tokens")}
    {'valid': [True, False, False], 'tokens': [1, 2, 0], 'unknown_tokens': [0, 2, 0]}
    >>> np.isnan(keras.ops.convert_to_numpy(out["value"])).tolist()
    [False, True, True]
    """
    text = keras.Input((), dtype="string", name="text")
    phrase = NormalizePhrases(name="normalize")(text)
    vectorize = keras.layers.TextVectorization(
        vocabulary=list(VOCABULARY),
        standardize=None,
        split="whitespace",
        output_mode="int",
        name="tokenize",
    )
    checked = CheckedTokens(MAX_LENGTH, name="check")(vectorize(phrase))
    # The grammar: a valid phrase is the spelling of a number of 0-999 (index
    # 0 of the lookup is every other string, "eleven hundred" among them).
    spelled = keras.layers.StringLookup(
        vocabulary=[number_to_words(n) for n in range(LARGEST + 1)],
        num_oov_indices=1,
        name="grammar",
    )(phrase)
    valid = keras.ops.logical_and(checked["valid"], keras.ops.greater(spelled, 0))
    prediction = model(checked["ids"])
    value = keras.ops.where(valid, prediction, keras.ops.full_like(prediction, np.nan))
    outputs = {
        "value": value,
        "valid": valid,
        "tokens": checked["tokens"],
        "unknown_tokens": checked["unknown_tokens"],
    }
    return keras.Model(text, outputs, name="number_words")
