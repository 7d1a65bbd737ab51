"""Number words to numbers: Trask et al. (2018), Section 4.3, Appendix D.

English number expressions of 0 to 999 ("five hundred and fifteen" -> 515)
are translated into the number. The paper trains on "the numbers 0-19 in
addition to a random sample from the rest of the interval, adjusted to make
sure that each unique token is present at least once in the training set",
with 169 training, 200 validation and 631 test examples. Those add up to
1,000, so the numbers are 0 to 999 ("one thousand" would be a token seen only
once, in whichever split holds it).

Spelling: British, with "and" after "hundred" when a remainder follows and no
hyphens, as in the paper's Figure 3 ("three hundred and thirty four",
"seven hundred and two", "eighty eight"). 30 tokens: "zero" to "nineteen",
"twenty" to "ninety", "hundred" and "and".
"""

import numpy as np

from nalu_research import paper

ONES = (
    "zero one two three four five six seven eight nine ten eleven twelve "
    "thirteen fourteen fifteen sixteen seventeen eighteen nineteen"
).split()
TENS = "twenty thirty forty fifty sixty seventy eighty ninety".split()
VOCABULARY = tuple(ONES + TENS + ["hundred", "and"])

# Table 3 and Table 11 of the paper: (train, validation, test) MAE.
PAPER_TABLE_3 = paper.table("table_3")
PAPER_TABLE_11 = paper.table("table_11")

# Figure 3 of the paper: the queries and the NALU's prediction after each token.
PAPER_FIGURE_3 = paper.table("figure_3")

SPLIT_SIZES = {"train": 169, "validation": 200, "test": 631}
LARGEST = 999


def number_to_words(n):
    """The English words for an integer `n` in [0, 999].

    >>> number_to_words(515)
    'five hundred and fifteen'
    >>> number_to_words(80), number_to_words(700)
    ('eighty', 'seven hundred')
    """
    integer = isinstance(n, (int, np.integer)) and not isinstance(n, (bool, np.bool_))
    if not integer or not 0 <= n <= LARGEST:
        raise ValueError(
            f"Received an invalid value for `n`, expected an integer in "
            f"[0, {LARGEST}]. Received: n={n!r}"
        )
    n = int(n)
    hundreds, rest = divmod(n, 100)
    words = []
    if hundreds:
        words += [ONES[hundreds], "hundred"]
        if rest:
            words.append("and")
    if rest or not hundreds:
        if rest < 20:
            words.append(ONES[rest])
        else:
            tens, ones = divmod(rest, 10)
            words.append(TENS[tens - 2])
            if ones:
                words.append(ONES[ones])
    return " ".join(words)


# Tokens of the longest expression ("three hundred and thirty four": 5).
MAX_LENGTH = max(len(number_to_words(n).split()) for n in range(LARGEST + 1))


MODELS = {"lstm": "LSTM", "nac": "LSTM + NAC", "nalu": "LSTM + NALU"}


def model_name(kind, readout):
    """The name of a model's rows: `MODELS[kind]`, or with the pair readout,
    which has no LSTM, "NALU over word pairs" (the paper's row beside it is
    still `MODELS[kind]`'s)."""
    if kind != "lstm" and readout == "pairs":
        return f"{kind.upper()} over word pairs"
    return MODELS[kind]


# How the NAC or NALU reads the LSTM (`--readout`; the models' module's
# docstring says what each is): the kinds each readout has.
READOUT_KINDS = {
    "step": ("nac", "nalu"),
    "recurrent": ("nac", "nalu"),
    "two-layer": ("nac", "nalu"),
    "configured": ("nalu",),
    "pairs": ("nac", "nalu"),
}
# What the loss reads (`--targets`): the last token's prediction against the
# number, or every token's against the value of the words read so far.
TARGETS = ("last", "prefix")
# How the configured readout's number per token is parameterized
# (`--token-values`): "log", `exp` of an embedding of width 1, so that Adam
# moves each number by about a fixed factor per step (1 to 100 in about 500
# steps at lr 0.01); "linear", the embedding itself, moved by about the
# learning rate per step (1 to 100 in about 10,000 steps).
TOKEN_VALUES = ("log", "linear")


def words_to_number(text):
    """The number an expression of `number_to_words` names (its inverse).

    >>> words_to_number("three hundred and thirty four")
    334
    """
    tokens = text.split()
    unknown = [t for t in tokens if t not in VOCABULARY]
    if not tokens or unknown:
        raise ValueError(
            "Received an invalid value for `text`, expected number words made "
            f"of {VOCABULARY}. Received: text={text!r}"
        )
    total = _running(tokens)[-1]
    if number_to_words(total) != " ".join(tokens):
        raise ValueError(
            "Received an invalid value for `text`, expected a well-formed "
            f"number expression such as {number_to_words(total)!r}. "
            f"Received: text={text!r}"
        )
    return total


def running_values(text):
    """The value of the words read so far, after each word of `text`.

    "and" keeps the value; "hundred" multiplies it by 100. The per-token
    targets of the prefix reading of Figure 3 (`NumberWords.prefix_targets`).

    >>> running_values("three hundred and thirty four")
    [3, 300, 300, 330, 334]
    """
    words_to_number(text)  # checks it
    return _running(text.split())


def _running(tokens):
    values, total = [], 0
    for token in tokens:
        if token == "hundred":
            total *= 100
        elif token in TENS:
            total += 10 * (TENS.index(token) + 2)
        elif token != "and":
            total += ONES.index(token)
        values.append(total)
    return values


def split_numbers(seed=0):
    """The numbers of each split: `{"train": ..., "validation": ..., "test": ...}`.

    Training holds 0-19 and 149 numbers drawn from 20-999, redrawn until
    every token appears in training; the remaining 831 numbers are shuffled
    and split into 200 validation and 631 test numbers. Fixed by `seed`.

    Example:

    >>> splits = split_numbers(seed=0)
    >>> [len(splits[name]) for name in ("train", "validation", "test")]
    [169, 200, 631]
    """
    rng = np.random.default_rng(seed)
    rest = np.arange(20, LARGEST + 1)
    extra = SPLIT_SIZES["train"] - 20
    for _ in range(1000):
        drawn = rng.choice(rest, size=extra, replace=False)
        train = np.concatenate([np.arange(20), np.sort(drawn)])
        if set(VOCABULARY) <= {t for n in train for t in number_to_words(n).split()}:
            break
    else:  # pragma: no cover - 149 draws miss a token with tiny probability
        raise RuntimeError("could not draw a training set covering every token")
    others = rng.permutation(np.setdiff1d(rest, drawn))
    n_validation = SPLIT_SIZES["validation"]
    return {
        "train": train,
        "validation": np.sort(others[:n_validation]),
        "test": np.sort(others[n_validation:]),
    }


def encode(texts, max_length=None):
    """Token ids of `texts`, padded with 0 at the end.

    The ids of `keras.layers.TextVectorization(vocabulary=VOCABULARY)`, so a
    model trained on them serves text through that layer: 0 pads, 1 is an
    unknown word (never produced here: it raises), id `i + 2` is
    `VOCABULARY[i]`. Returns an int32
    array of shape `(len(texts), max_length)`, `max_length` defaulting to the
    longest text.

    >>> encode(["eighty eight", "zero"]).tolist()
    [[28, 10], [2, 0]]
    """
    token_lists = [text.split() for text in texts]
    for text, tokens in zip(texts, token_lists, strict=True):
        unknown = [t for t in tokens if t not in VOCABULARY]
        if unknown:
            raise ValueError(
                f"Received an invalid value for `texts`, expected words of "
                f"{VOCABULARY}. Received: {text!r} (unknown {unknown})"
            )
    longest = max(len(tokens) for tokens in token_lists)
    max_length = longest if max_length is None else max_length
    if max_length < longest:
        raise ValueError(
            "Received an invalid value for `max_length`, expected at least the "
            f"longest text ({longest} tokens). Received: max_length={max_length}"
        )
    ids = np.zeros((len(texts), max_length), dtype=np.int32)
    for row, tokens in enumerate(token_lists):
        ids[row, : len(tokens)] = [VOCABULARY.index(t) + 2 for t in tokens]
    return ids


class NumberWords:
    """The number-word translation task with the paper's split.

    Args:
        seed: Fixes which numbers are in which split.

    Attributes:
        numbers: `{"train", "validation", "test"}` -> int array of numbers.
        max_length: Tokens of the longest expression (5).

    Example:

    >>> from nalu_research.tasks.number_words import NumberWords
    >>> task = NumberWords(seed=0)
    >>> texts, ids, y = task.split("train")
    >>> texts[15], ids.shape, y.shape
    ('fifteen', (169, 5), (169,))
    """

    def __init__(self, seed=0):
        from keras_nalu import validation

        self.seed = validation.non_negative_int("seed", seed)
        self.numbers = split_numbers(self.seed)
        self.max_length = MAX_LENGTH

    def split(self, name):
        """`(texts, token ids, targets)` of split `name`; targets are float32."""
        from keras_nalu import validation

        validation.one_of("name", name, tuple(SPLIT_SIZES))
        numbers = self.numbers[name]
        texts = [number_to_words(n) for n in numbers]
        return texts, encode(texts, self.max_length), numbers.astype(np.float32)

    def lone_words(self, name="train"):
        """The words that split `name` holds only as whole one-word phrases
        ("ten" in "ten" and in no longer phrase): the split shows what each
        is, never what it does after other words.

        >>> NumberWords(seed=0).lone_words()
        ('zero', 'ten', 'thirteen', 'seventeen', 'eighteen')
        """
        texts, _, _ = self.split(name)
        longer = {t for text in texts for t in text.split() if " " in text}
        return tuple(t for t in VOCABULARY if t not in longer and t in texts)

    def after_lone_words(self, name, train="train"):
        """Bool `(n,)`: which phrases of split `name` hold a word of
        `lone_words(train)` after or before other words, a use the training
        split never shows ("six hundred and ten" on the default split).

        >>> int(NumberWords(seed=0).after_lone_words("test").sum())
        26
        """
        texts, _, _ = self.split(name)
        lone = set(self.lone_words(train))
        return np.array([" " in t and bool(lone & set(t.split())) for t in texts])

    def prefix_targets(self, name):
        """Per-token targets of split `name`, float32 `(n, max_length)`: the
        value of the words read so far (`running_values`), NaN after the
        last word.

        >>> task = NumberWords(seed=0)
        >>> task.split("train")[0][-1], task.prefix_targets("train")[-1].tolist()
        ('nine hundred and ninety seven', [9.0, 900.0, 900.0, 990.0, 997.0])
        """
        texts, _, _ = self.split(name)
        targets = np.full((len(texts), self.max_length), np.nan, np.float32)
        for row, text in enumerate(texts):
            values = running_values(text)
            targets[row, : len(values)] = values
        return targets


# The served model's check: phrases as people type them, each with its number
# (case, hyphens, spaces, "a hundred", with and without "and", round hundreds),
# and phrases the served model must flag invalid. A fixed list, so that every
# exported model's score reads the same way.
TYPED_PHRASES = {
    "three hundred": 300,
    "one hundred": 100,
    "a hundred and five": 105,
    "forty-two": 42,
    "Forty Two": 42,
    "five hundred eleven": 511,
    "nine hundred ninety nine": 999,
    "two hundred and twelve": 212,
    "  seven   hundred and two ": 702,
    "eighty-eight": 88,
    "nineteen": 19,
    "six hundred and thirty": 630,
    "zero": 0,
    "nine hundred and ninety-nine": 999,
    "Two Hundred Twelve": 212,
}
INVALID_PHRASES = ("", "seven banana", "one thousand", "eleven hundred", "hundred and")
WITHIN = 0.5  # how far from its number a typed phrase may be served


def served_phrases():
    """The phrases of the served model's check: `TYPED_PHRASES`, then
    `INVALID_PHRASES`."""
    return [*TYPED_PHRASES, *INVALID_PHRASES]


def served_check(value, valid):
    """The served model's check from what a client of the SavedModel got for
    `served_phrases()` (`value`, `valid`): how many typed phrases are valid
    and within `WITHIN` of their number, how many invalid ones are flagged.
    Returns `{"phrases", "values", "served", "within", "flagged"}`."""
    numbers = np.array(list(TYPED_PHRASES.values()), np.float64)
    typed = len(TYPED_PHRASES)
    served = np.asarray(value, np.float64)[:typed]
    valid = np.asarray(valid, bool)
    within = int(np.sum(valid[:typed] & (np.abs(served - numbers) <= WITHIN)))
    return {
        "phrases": list(TYPED_PHRASES),
        "values": numbers.tolist(),
        "served": served.tolist(),
        "within": within,
        "flagged": int(np.sum(~valid[typed:])),
    }
