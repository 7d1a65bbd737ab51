"""`keras_nalu.checkpoints.Checkpoint`: the one checkpoint mechanism of
`training.fit` and the seed-batched engine (their resume tests are in
test_training.py and test_seed_batched.py)."""

import os
import stat

import ml_dtypes
import numpy as np
import pytest

from keras_nalu.checkpoints import FILENAME, KEPT, Checkpoint
from keras_nalu.validation import InvalidValueError

pytestmark = pytest.mark.backends


def test_values_named_arrays_and_state_round_trip_with_their_dtypes(tmp_path):
    values = [
        np.arange(6, dtype="float32").reshape(2, 3),
        np.array(7, dtype="int64"),  # a scalar stays a scalar
        np.zeros((0, 4), dtype="float64"),
        np.array([1.5, -2.25], dtype=ml_dtypes.bfloat16),
        np.array([True, False]),
    ]
    state = {"epoch": 3, "history": {"loss": [1.0, 0.5]}, "note": None}
    checkpoint = Checkpoint(tmp_path / "run")
    checkpoint.save(values, state, named={"0/best": np.array([0.25])})
    loaded, named, got = Checkpoint(tmp_path / "run").load()
    assert got == state
    assert list(named) == ["0/best"] and named["0/best"].tolist() == [0.25]
    for want, have in zip(values, loaded, strict=True):
        assert have.dtype == want.dtype and have.shape == want.shape
        np.testing.assert_array_equal(have, want)


def test_a_save_replaces_the_previous_one_and_leaves_one_file(tmp_path):
    checkpoint = Checkpoint(tmp_path)
    for epoch in range(3):
        checkpoint.save([np.full(2, epoch)], {"epoch": epoch})
    assert [p.name for p in tmp_path.iterdir()] == [FILENAME]
    assert checkpoint.load()[2] == {"epoch": 2}


def test_a_save_that_fails_keeps_the_previous_checkpoint(tmp_path, monkeypatch):
    checkpoint = Checkpoint(tmp_path)
    checkpoint.save([np.ones(2)], {"epoch": 1})

    def broken(file, **arrays):
        file.write(b"half a checkpoint")
        raise OSError("disk full")

    monkeypatch.setattr(np, "savez", broken)
    with pytest.raises(OSError, match="disk full"):
        checkpoint.save([np.zeros(2)], {"epoch": 2})
    monkeypatch.undo()
    assert [p.name for p in tmp_path.iterdir()] == [FILENAME]
    values, _, state = checkpoint.load()
    assert state == {"epoch": 1} and values[0].tolist() == [1.0, 1.0]


def test_what_a_kill_while_saving_leaves_is_ignored_then_removed(tmp_path):
    checkpoint = Checkpoint(tmp_path)
    checkpoint.save([np.ones(1)], {"epoch": 1})
    (tmp_path / ".checkpoint-killed.partial").write_bytes(b"half")
    assert checkpoint.load()[2] == {"epoch": 1}
    checkpoint.save([np.ones(1)], {"epoch": 2})
    assert [p.name for p in tmp_path.iterdir()] == [FILENAME]


def test_remove_deletes_only_checkpoint_files(tmp_path):
    folder = tmp_path / "run"
    checkpoint = Checkpoint(folder)
    checkpoint.save([np.ones(1)], {})
    (folder / "notes.txt").write_text("mine")
    (folder / ".checkpoint-x.partial").write_bytes(b"half")
    checkpoint.remove()
    assert [p.name for p in folder.iterdir()] == ["notes.txt"]
    (folder / "notes.txt").unlink()
    checkpoint.save([np.ones(1)], {})
    checkpoint.remove()
    assert not folder.exists()
    checkpoint.remove()  # nothing there: nothing to do


def test_a_kept_checkpoint_is_marked_until_removed(tmp_path):
    folder = tmp_path / "run"
    checkpoint = Checkpoint(folder)
    checkpoint.keep()  # no checkpoint: nothing to mark
    assert not folder.exists() and not checkpoint.kept
    checkpoint.save([np.ones(1)], {})
    assert not checkpoint.kept
    checkpoint.keep()
    assert checkpoint.kept and Checkpoint(folder).kept
    checkpoint.save([np.zeros(1)], {})  # a continued run stays kept
    assert checkpoint.kept
    checkpoint.remove()
    assert not folder.exists() and not checkpoint.kept
    # A mark without its checkpoint (deleted by hand) marks nothing.
    checkpoint.save([np.ones(1)], {})
    checkpoint.keep()
    (folder / FILENAME).unlink()
    assert not checkpoint.kept and (folder / KEPT).is_file()


# `load_for` is the resume policy of `training.fit` (argument
# "checkpoint_dir") and of the seed-batched engine ("checkpoint"): the same
# for both, named after each caller's argument.
CALLERS = ["checkpoint_dir", "checkpoint"]


@pytest.mark.parametrize("argument", CALLERS)
def test_load_for_resumes_only_a_checkpoint_of_its_config(tmp_path, argument):
    checkpoint = Checkpoint(tmp_path / "run", argument=argument)
    assert checkpoint.load_for("a") is None  # none yet
    checkpoint.save([np.arange(2.0)], {"config": "a", "step": 5})
    values, named, state = checkpoint.load_for("a")
    assert values[0].tolist() == [0.0, 1.0] and named == {} and state["step"] == 5


@pytest.mark.parametrize("argument", CALLERS)
def test_load_for_starts_afresh_over_another_config_with_a_warning(
    tmp_path, argument, caplog
):
    checkpoint = Checkpoint(tmp_path, argument=argument)
    checkpoint.save([np.ones(1)], {"config": "a"})
    with caplog.at_level("WARNING", logger="keras_nalu.checkpoints"):
        assert checkpoint.load_for("b") is None
    (record,) = caplog.records
    assert record.levelname == "WARNING" and record.name == "keras_nalu.checkpoints"
    assert record.getMessage() == (
        f"The checkpoint {tmp_path / FILENAME} is from another configuration: "
        "starting afresh (it will be replaced)."
    )
    assert checkpoint.load()[2] == {"config": "a"}  # left for the run to replace


@pytest.mark.parametrize("argument", CALLERS)
def test_load_for_refuses_a_kept_checkpoint_of_another_config(tmp_path, argument):
    checkpoint = Checkpoint(tmp_path, argument=argument)
    checkpoint.save([np.ones(1)], {"config": "a"})
    checkpoint.keep()
    with pytest.raises(InvalidValueError) as error:
        checkpoint.load_for("b")
    assert error.value.name == argument and error.value.value == str(tmp_path)
    assert str(error.value).startswith(
        f"Received an invalid value for `{argument}`, expected a folder without "
        "a kept checkpoint of another configuration"
    )
    # Its own config resumes it, kept or not, as `load` reads it.
    assert checkpoint.load_for("a")[2] == {"config": "a"}


def test_load_for_counts_a_state_without_config_as_another(tmp_path, caplog):
    checkpoint = Checkpoint(tmp_path)
    checkpoint.save([np.ones(1)], {"epoch": 1})  # no "config"
    assert checkpoint.load_for("a") is None
    assert "from another configuration" in caplog.text
    checkpoint.keep()
    with pytest.raises(InvalidValueError, match="`checkpoint_dir`"):
        checkpoint.load_for("a")


def test_load_for_refuses_what_load_refuses(tmp_path):
    (tmp_path / "old").mkdir()
    (tmp_path / "old" / "checkpoint").write_text('model_checkpoint_path: "ckpt-3"\n')
    with pytest.raises(ValueError, match="TensorFlow's format"):
        Checkpoint(tmp_path / "old").load_for("a")
    (tmp_path / "torn").mkdir()
    (tmp_path / "torn" / FILENAME).write_bytes(b"not a zip")
    with pytest.raises(ValueError, match="is not a keras_nalu checkpoint"):
        Checkpoint(tmp_path / "torn").load_for("a")


def test_a_tensorflow_checkpoint_of_an_earlier_version_is_refused(tmp_path):
    (tmp_path / "checkpoint").write_text('model_checkpoint_path: "ckpt-3"\n')
    (tmp_path / "ckpt-3.index").write_bytes(b"")
    with pytest.raises(ValueError, match="TensorFlow's format.*0.2 or earlier"):
        Checkpoint(tmp_path).load()


def test_a_file_that_is_no_checkpoint_is_refused_by_name(tmp_path):
    (tmp_path / FILENAME).write_bytes(b"not a zip")
    with pytest.raises(ValueError, match=f"{FILENAME}' is not a keras_nalu checkpoint"):
        Checkpoint(tmp_path).load()


@pytest.mark.skipif(os.geteuid() == 0, reason="root writes into read-only folders")
def test_an_unwritable_folder_is_refused_before_any_work(tmp_path):
    tmp_path.chmod(stat.S_IRUSR | stat.S_IXUSR)
    try:
        with pytest.raises(ValueError, match="checkpoint_dir=.*new"):
            Checkpoint(tmp_path / "new").check_writable()
    finally:
        tmp_path.chmod(stat.S_IRWXU)


def test_a_folder_under_a_file_is_refused_before_any_work(tmp_path):
    (tmp_path / "file").write_text("")
    with pytest.raises(ValueError, match="expected a folder where a checkpoint"):
        Checkpoint(tmp_path / "file" / "run").check_writable()
