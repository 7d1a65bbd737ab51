"""`keras_nalu.checkpoints.Checkpoint`: the one checkpoint mechanism of
`training.fit` and the seed-batched engine (their resume tests are in
test_training.py and test_seed_batched.py)."""

import contextlib
import os
import re
import signal
import stat
import subprocess
import sys
import time

import ml_dtypes
import numpy as np
import pytest

from keras_nalu.checkpoints import (
    FILENAME,
    KEPT,
    LOCK,
    Checkpoint,
    CheckpointInUseError,
)
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
    assert sorted(p.name for p in tmp_path.iterdir()) == [LOCK, FILENAME]
    checkpoint.close()
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
    checkpoint.close()
    assert [p.name for p in tmp_path.iterdir()] == [FILENAME]
    values, _, state = checkpoint.load()
    assert state == {"epoch": 1} and values[0].tolist() == [1.0, 1.0]


def test_what_a_kill_while_saving_leaves_is_ignored_then_removed(tmp_path):
    checkpoint = Checkpoint(tmp_path)
    checkpoint.save([np.ones(1)], {"epoch": 1})
    (tmp_path / ".checkpoint-killed.partial").write_bytes(b"half")
    assert checkpoint.load()[2] == {"epoch": 1}
    checkpoint.save([np.ones(1)], {"epoch": 2})
    checkpoint.close()
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


# A damaged checkpoint: refused with a ValueError naming the file and what is
# wrong with it, the file left as it was (never a fresh start over it).


def a_checkpoint(folder):
    """Saves a checkpoint of three arrays in `folder` (the first large, so
    the middle of the file falls in its data); returns the file's bytes."""
    with Checkpoint(folder) as checkpoint:
        checkpoint.save(
            [np.arange(1000, dtype="float32"), np.ones((3, 2)), np.array(7)],
            {"config": "a", "epoch": 2},
            named={"0/best": np.array(0.5)},
        )
    return (folder / FILENAME).read_bytes()


def refused(path, what):
    return (
        f"The file {str(path)!r} is not a keras_nalu checkpoint: {what}. It is "
        "left as it is: delete it (or move it away) to start afresh, or use "
        "another checkpoint_dir."
    )


def flip_a_bit_in_the_middle(good, file):
    damaged = bytearray(good)
    damaged[len(good) // 2] ^= 0x10
    file.write(damaged)


def another_models_npz(good, file):
    np.savez(file, kernel=np.ones((2, 1)), bias=np.zeros(1))


DAMAGE = {
    "truncated": (
        lambda good, file: file.write(good[: len(good) // 2]),
        "it is cut short or damaged: a zip archive of {half} bytes whose end, "
        "the directory of its entries, cannot be read (File is not a zip file)",
    ),
    "zero bytes": (lambda good, file: None, "it is empty (0 bytes)"),
    "bits flipped": (
        flip_a_bit_in_the_middle,
        "its entry 'value/0' is damaged (BadZipFile: Bad CRC-32 for file "
        "'value/0.npy')",
    ),
    "npy": (
        lambda good, file: np.save(file, np.arange(3.0)),
        "it is a single NumPy array (an .npy file), not the .npz archive of a "
        "checkpoint",
    ),
    "text": (
        lambda good, file: file.write(b"epoch: 3\nloss: 0.25\n"),
        r"it is not an .npz (zip) archive: it starts with b'epoch: 3\nloss: 0'",
    ),
    "an npz keras_nalu did not write": (
        another_models_npz,
        "it is an .npz archive without a 'state' entry, not one keras_nalu wrote",
    ),
}


@pytest.mark.parametrize("kind", DAMAGE)
def test_a_damaged_checkpoint_is_refused_naming_the_file_and_the_damage(tmp_path, kind):
    good = a_checkpoint(tmp_path)
    damage, what = DAMAGE[kind]
    path = tmp_path / FILENAME
    with open(path, "wb") as file:
        damage(good, file)
    damaged = path.read_bytes()
    message = refused(path, what.format(half=len(good) // 2))
    for load in (Checkpoint(tmp_path).load, lambda: Checkpoint(tmp_path).load_for("a")):
        with pytest.raises(ValueError) as error:
            load()
        assert str(error.value) == message
    assert path.read_bytes() == damaged  # left as it was


def test_no_truncation_or_flipped_bit_gives_another_error_or_other_data(tmp_path):
    # Every length the file can be cut to and a bit flipped in every byte:
    # either the ValueError naming the file, or (a flip in a field nothing
    # reads, such as a timestamp) exactly the saved checkpoint.
    with Checkpoint(tmp_path) as checkpoint:
        checkpoint.save([np.arange(3.0), np.array(2, "int32")], {"config": "a"},
                        named={"n": np.array([True])})  # fmt: skip
    good = (tmp_path / FILENAME).read_bytes()
    want = Checkpoint(tmp_path).load()
    damaged = [good[:n] for n in range(len(good))]
    damaged += [
        good[:i] + bytes([good[i] ^ 4]) + good[i + 1 :] for i in range(len(good))
    ]
    for data in damaged:
        (tmp_path / FILENAME).write_bytes(data)
        try:
            values, named, state = Checkpoint(tmp_path).load()
        except ValueError as error:
            assert str(error).startswith(f"The file {str(tmp_path / FILENAME)!r}")
            continue
        assert (
            state == want[2] and list(named) == ["n"] and named["n"].tolist() == [True]
        )
        for have, saved in zip(values, want[0], strict=True):
            assert have.dtype == saved.dtype
            np.testing.assert_array_equal(have, saved)


@pytest.mark.parametrize(
    "layout, what",
    [
        ([((1000,), "float32")], "3 arrays where this run has 1"),
        (
            [((10, 100), "float32"), ((3, 2), "float64"), ((), "int64")],
            "array 0 of shape (1000,) and dtype float32 where this run has shape "
            "(10, 100) and dtype float32",
        ),
        (
            [((1000,), "float32"), ((3, 2), "float32"), ((), "int64")],
            "array 1 of shape (3, 2) and dtype float64 where this run has shape "
            "(3, 2) and dtype float32",
        ),
    ],
    ids=["count", "shape", "dtype"],
)
def test_a_checkpoint_of_another_models_weights_is_refused_by_name(
    tmp_path, layout, what
):
    good = a_checkpoint(tmp_path)
    with pytest.raises(ValueError) as error:
        Checkpoint(tmp_path).load_for("a", layout=layout)
    assert str(error.value) == (
        f"The checkpoint {str(tmp_path / FILENAME)!r} was written by another "
        f"model ({what}). Delete it or use another checkpoint_dir."
    )
    assert (tmp_path / FILENAME).read_bytes() == good
    # Its own layout resumes it; another config's is not checked (replaced).
    own = [((1000,), "float32"), ((3, 2), "float64"), ((), "int64")]
    assert Checkpoint(tmp_path).load_for("a", layout=own)[2]["epoch"] == 2
    assert Checkpoint(tmp_path).load_for("b", layout=layout) is None


# The checkpoint file's mode follows the umask, as every other file a run
# writes (tempfile.mkstemp would make it 0600).


@pytest.mark.skipif(os.name != "posix", reason="file modes are POSIX's")
@pytest.mark.parametrize(
    "umask, mode", [(0o022, 0o644), (0o077, 0o600), (0o002, 0o664)]
)
def test_the_checkpoint_file_follows_the_umask(tmp_path, umask, mode):
    previous = os.umask(umask)
    try:
        with Checkpoint(tmp_path) as checkpoint:
            checkpoint.save([np.ones(1)], {})
            checkpoint.save([np.ones(1)], {})  # replaced: the same mode
    finally:
        os.umask(previous)
    assert stat.S_IMODE((tmp_path / FILENAME).stat().st_mode) == mode


def test_a_save_writes_under_a_temporary_name_of_its_process(tmp_path, monkeypatch):
    savez, names = np.savez, []

    def spy(file, **arrays):
        names.extend(p.name for p in tmp_path.iterdir() if p.suffix == ".partial")
        savez(file, **arrays)

    monkeypatch.setattr(np, "savez", spy)
    with Checkpoint(tmp_path) as checkpoint:
        checkpoint.save([np.ones(1)], {})
    (name,) = names
    assert re.fullmatch(rf"\.checkpoint-{os.getpid()}-[0-9a-f]{{8}}\.partial", name)
    assert [p.name for p in tmp_path.iterdir()] == [FILENAME]


# A run owns its folder: a second run on it fails at once, naming the folder
# and the process that holds it.


def in_use(folder, pid, this_process=False):
    holder = f"process {pid}" + (
        " (this process: another Checkpoint of the folder is open)"
        if this_process
        else ""
    )
    return (
        f"The checkpoint folder {str(folder)!r} is in use by another run: "
        f"{holder} holds it. Two runs in one folder would replace each "
        "other's checkpoints; wait for that run to end, or use another "
        "checkpoint_dir."
    )


def test_a_second_checkpoint_of_a_held_folder_fails_at_once(tmp_path):
    folder = tmp_path / "run"
    first = Checkpoint(folder)
    first.lock()
    assert first.locked and (folder / LOCK).is_file()
    first.save([np.arange(2.0)], {"config": "a"})
    good = (folder / FILENAME).read_bytes()
    second = Checkpoint(folder)
    attempts = {
        "lock": second.lock,
        "save": lambda: second.save([np.zeros(2)], {"config": "b"}),
        "keep": second.keep,
        "remove": second.remove,
        "with": lambda: second.__enter__(),
    }
    for name, attempt in attempts.items():
        with pytest.raises(CheckpointInUseError) as error:
            attempt()
        assert isinstance(error.value, RuntimeError), name
        assert str(error.value) == in_use(folder, os.getpid(), this_process=True)
        assert error.value.directory == folder and error.value.pid == os.getpid()
    assert not second.locked and (folder / FILENAME).read_bytes() == good
    assert second.load_for("a")[2] == {"config": "a"}  # reading needs no lock
    first.close()
    assert not first.locked and not (folder / LOCK).exists()
    with second:
        second.save([np.zeros(2)], {"config": "b"})
        with pytest.raises(CheckpointInUseError):
            first.lock()
    assert sorted(p.name for p in folder.iterdir()) == [FILENAME]


def test_fit_fails_on_a_held_folder_before_any_work(tmp_path):
    from keras_nalu.training import fit, keep_checkpoint, remove_checkpoint

    built = []

    def model_fn():
        built.append(1)
        raise AssertionError("not reached")

    with Checkpoint(tmp_path) as holder:
        holder.save([np.ones(1)], {"config": "a"})
        good = (tmp_path / FILENAME).read_bytes()
        for attempt in (
            lambda: fit(model_fn, lambda epoch: None, loss="mse",
                        optimizer_fn=lambda: None, epochs=1,
                        checkpoint_dir=tmp_path),
            lambda: keep_checkpoint(tmp_path),
            lambda: remove_checkpoint(tmp_path),
        ):  # fmt: skip
            with pytest.raises(CheckpointInUseError) as error:
                attempt()
            assert str(error.value) == in_use(tmp_path, os.getpid(), True)
    assert built == [] and (tmp_path / FILENAME).read_bytes() == good


def test_fit_releases_its_folder_when_it_raises(tmp_path):
    from keras_nalu.training import fit

    def model_fn():
        assert (tmp_path / LOCK).is_file()  # held while it runs
        raise RuntimeError("no model")

    with pytest.raises(RuntimeError, match="no model"):
        fit(model_fn, lambda epoch: None, loss="mse", optimizer_fn=lambda: None,
            epochs=1, checkpoint_dir=tmp_path)  # fmt: skip
    assert not (tmp_path / LOCK).exists()
    with Checkpoint(tmp_path):
        pass


def test_without_fcntl_folders_are_not_locked(tmp_path, monkeypatch):
    # Windows has no `flock`: two checkpoints of a folder both proceed.
    from keras_nalu import checkpoints

    monkeypatch.setattr(checkpoints, "fcntl", None)
    with Checkpoint(tmp_path) as first, Checkpoint(tmp_path) as second:
        first.save([np.ones(1)], {})
        second.save([np.zeros(1)], {})
        assert not first.locked and not second.locked
    assert [p.name for p in tmp_path.iterdir()] == [FILENAME]


# In two processes: the first holds the folder, the second fails at once.
# KERAS_BACKEND=numpy: `import keras_nalu` in 2 s, not TensorFlow's 5.

HOLDER = """
import os, sys
import numpy as np
from keras_nalu.checkpoints import Checkpoint

checkpoint = Checkpoint(sys.argv[1])
checkpoint.lock()
checkpoint.save([np.arange(5.0)], {"config": "first", "epoch": 3})
child = os.fork() if sys.argv[2] == "fork" else 0
if child == 0 and sys.argv[2] == "fork":
    sys.stdin.read()  # a forked child (a data loader, ...) outlives its parent
    os._exit(0)
print("ready", child, flush=True)
sys.stdin.read()  # until the test closes it
checkpoint.close()
"""

SECOND = """
import sys, time
import numpy as np
from keras_nalu.checkpoints import Checkpoint, CheckpointInUseError

checkpoint = Checkpoint(sys.argv[1])
start = time.monotonic()
try:
    checkpoint.lock()
    checkpoint.save([np.zeros(5)], {"config": "second", "epoch": 0})
except CheckpointInUseError as error:
    print(time.monotonic() - start, error.pid, error, sep="\\n")
    sys.exit(3)
"""


def start_holder(folder, fork=False):
    """A process that locks `folder`, saves a checkpoint there and waits
    for its stdin to close; returns it and its forked child's pid (or 0)."""
    holder = subprocess.Popen(
        [sys.executable, "-c", HOLDER, str(folder), "fork" if fork else "-"],
        stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True,
        env={**os.environ, "KERAS_BACKEND": "numpy"},
    )  # fmt: skip
    word, child = holder.stdout.readline().split()
    assert word == "ready"
    return holder, int(child)


@pytest.mark.processes
def test_a_second_process_on_a_held_folder_fails_at_once(tmp_path):
    holder, _ = start_holder(tmp_path)
    try:
        good = (tmp_path / FILENAME).read_bytes()
        files = sorted(p.name for p in tmp_path.iterdir())
        second = subprocess.run(
            [sys.executable, "-c", SECOND, str(tmp_path)],
            capture_output=True, text=True, timeout=120,
            env={**os.environ, "KERAS_BACKEND": "numpy"},
        )  # fmt: skip
        assert second.returncode == 3, second.stderr
        seconds, pid, message = second.stdout.split("\n", 2)
        assert float(seconds) < 1.0  # at once: no waiting for the lock
        assert int(pid) == holder.pid
        assert message.strip() == in_use(tmp_path, holder.pid)
        # Nothing of the first run's changed.
        assert (tmp_path / FILENAME).read_bytes() == good
        assert sorted(p.name for p in tmp_path.iterdir()) == files == [LOCK, FILENAME]
        assert Checkpoint(tmp_path).load()[2] == {"config": "first", "epoch": 3}
    finally:
        holder.communicate("", timeout=60)
    assert holder.returncode == 0
    assert [p.name for p in tmp_path.iterdir()] == [FILENAME]  # released


@pytest.mark.processes
@pytest.mark.skipif(not hasattr(os, "fork"), reason="needs os.fork")
def test_a_folder_is_free_again_once_its_holder_is_killed(tmp_path):
    # Even with a child it forked still running: the child let its copy go.
    holder, child = start_holder(tmp_path, fork=True)
    try:
        with pytest.raises(CheckpointInUseError, match=f"process {holder.pid} "):
            Checkpoint(tmp_path).lock()
        holder.send_signal(signal.SIGKILL)
        holder.wait(timeout=60)
        assert (tmp_path / LOCK).read_text().split()[0] == str(holder.pid)  # stale
        # Free once the forked child has let its copy go, which it does as it
        # starts: on a loaded machine it may not have run yet when the holder
        # dies, so the lock is retried for a while (never forever).
        deadline = time.monotonic() + 30
        while True:
            checkpoint = Checkpoint(tmp_path)
            try:
                checkpoint.lock()
                break
            except CheckpointInUseError:
                assert time.monotonic() < deadline, "the folder stayed locked"
                time.sleep(0.05)
        with checkpoint:
            assert (tmp_path / LOCK).read_text().split()[0] == str(os.getpid())
            assert checkpoint.load()[2] == {"config": "first", "epoch": 3}
    finally:
        holder.kill()
        holder.communicate(timeout=60)  # closes stdin: the child ends
        with contextlib.suppress(ProcessLookupError):
            os.kill(child, signal.SIGKILL)
