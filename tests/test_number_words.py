import numpy as np
import pytest

from nalu_research.tasks.number_words import (
    VOCABULARY,
    NumberWords,
    encode,
    number_to_words,
    split_numbers,
    words_to_number,
)


@pytest.mark.parametrize(
    "number, words",
    [
        (0, "zero"),
        (7, "seven"),
        (15, "fifteen"),
        (20, "twenty"),
        (88, "eighty eight"),
        (100, "one hundred"),
        (334, "three hundred and thirty four"),
        (515, "five hundred and fifteen"),
        (702, "seven hundred and two"),
        (910, "nine hundred and ten"),
        (999, "nine hundred and ninety nine"),
    ],
)
def test_known_numbers_round_trip(number, words):
    assert number_to_words(number) == words
    assert words_to_number(words) == number


def test_every_number_round_trips_and_has_a_unique_expression():
    expressions = [number_to_words(n) for n in range(1000)]
    assert [words_to_number(e) for e in expressions] == list(range(1000))
    assert len(set(expressions)) == 1000
    assert {t for e in expressions for t in e.split()} == set(VOCABULARY)
    assert len(VOCABULARY) == 30


def test_split_sizes_disjoint_and_complete():
    numbers = split_numbers(seed=0)
    sizes = {name: len(values) for name, values in numbers.items()}
    assert sizes == {"train": 169, "validation": 200, "test": 631}
    union = np.concatenate(list(numbers.values()))
    assert sorted(union.tolist()) == list(range(1000))


@pytest.mark.parametrize("seed", [0, 1, 7])
def test_training_set_holds_0_to_19_and_every_token(seed):
    train = split_numbers(seed)["train"]
    assert set(range(20)) <= set(train.tolist())
    tokens = {t for n in train for t in number_to_words(int(n)).split()}
    assert tokens == set(VOCABULARY)


def test_split_is_fixed_by_the_seed():
    a, b, c = split_numbers(3), split_numbers(3), split_numbers(4)
    assert all(np.array_equal(a[k], b[k]) for k in a)
    assert not np.array_equal(a["test"], c["test"])


def test_task_split_gives_texts_ids_and_targets():
    task = NumberWords(seed=0)
    texts, ids, y = task.split("test")
    assert ids.shape == (631, 5) and ids.dtype == np.int32 and y.dtype == np.float32
    assert [words_to_number(t) for t in texts] == y.astype(int).tolist()
    for row, text in zip(ids, texts, strict=True):
        tokens = text.split()
        assert [VOCABULARY[i - 2] for i in row[: len(tokens)]] == tokens
        assert not row[len(tokens) :].any()


def test_encode_matches_text_vectorization():
    import keras

    texts = ["three hundred and thirty four", "eighty eight", "zero"]
    layer = keras.layers.TextVectorization(vocabulary=list(VOCABULARY))
    np.testing.assert_array_equal(
        keras.ops.convert_to_numpy(layer(np.array(texts))), encode(texts)
    )


@pytest.mark.parametrize("n", [-1, 1000, 3.0, True, "5"])
def test_invalid_number_raises(n):
    with pytest.raises(ValueError, match="`n`.*integer in \\[0, 999\\]"):
        number_to_words(n)


@pytest.mark.parametrize(
    "text", ["", "eleventy", "hundred five", "five and", "twenty ten"]
)
def test_invalid_words_raise(text):
    with pytest.raises(ValueError, match="`text`"):
        words_to_number(text)


def test_encode_rejects_unknown_words_and_short_length():
    with pytest.raises(ValueError, match="unknown \\['eleventy'\\]"):
        encode(["eleventy one"])
    with pytest.raises(ValueError, match="`max_length`.*max_length=1"):
        encode(["eighty eight"], max_length=1)


def test_invalid_seed_and_split_raise():
    with pytest.raises(ValueError, match="`seed`.*seed=-1"):
        NumberWords(seed=-1)
    with pytest.raises(ValueError, match="`name`.*name='valid'"):
        NumberWords().split("valid")


def test_lone_words_are_those_training_shows_only_alone():
    task = NumberWords(seed=0)
    texts = task.split("train")[0]
    lone = task.lone_words()
    longer = [t.split() for t in texts if " " in t]
    for word in VOCABULARY:
        alone = word in texts and not any(word in words for words in longer)
        assert (word in lone) == alone, word
    assert set(lone) >= {"zero", "ten"}  # "six hundred and ten" is not in training


def test_after_lone_words_marks_the_phrases_that_use_them_with_other_words():
    task = NumberWords(seed=0)
    lone = set(task.lone_words())
    for split in ("validation", "test"):
        texts = task.split(split)[0]
        marked = task.after_lone_words(split)
        assert marked.shape == (len(texts),) and marked.dtype == bool
        for text, flag in zip(texts, marked, strict=True):
            assert flag == (len(text.split()) > 1 and bool(lone & set(text.split())))
        assert 0 < marked.sum() < len(texts)
    # Training itself never uses a lone word beside another.
    assert not task.after_lone_words("train").any()
