"""nalu_research.monitoring: the output options every experiment shares, and
what they refuse."""

import argparse
import importlib.util
import json
from pathlib import Path

import numpy as np
import pytest

from keras_nalu.training import CheckpointAheadError
from nalu_research import monitoring, runs
from nalu_research.arguments import add_training_arguments
from tests.processes import tensorboard_scalars


def parser(json_default="results/x.json", **kwargs):
    parser = argparse.ArgumentParser(prog="x.py")
    monitoring.add_output_arguments(parser, json_default, **kwargs)
    add_training_arguments(parser, "x")
    return parser


@pytest.mark.research  # the plot needs matplotlib
def test_the_plot_goes_beside_the_json_unless_asked_elsewhere(tmp_path):
    args = parser().parse_args([])
    assert monitoring.png_path(args) == Path("results/x.png")
    args = parser().parse_args(["--json", str(tmp_path / "a.json")])
    assert monitoring.png_path(args) == tmp_path / "a.png"
    args = parser().parse_args(["--png", str(tmp_path / "p.png")])
    assert monitoring.png_path(args) == tmp_path / "p.png"


def test_a_computed_default_is_named_in_the_help(capsys):
    with pytest.raises(SystemExit):
        parser(None, shown_default="results/x_TASK.json").parse_args(["--help"])
    assert "(default results/x_TASK.json)" in capsys.readouterr().out


@pytest.mark.parametrize(
    "argv, message",
    [
        (["--json", "{tmp}"], "argument --json: expected a file, got the folder"),
        (["--png", "{tmp}"], "argument --png: expected a file, got the folder"),
        (
            ["--tensorboard", "{tmp}/file"],
            "argument --tensorboard: expected a folder for the TensorBoard logs, "
            "got the file",
        ),
    ],
)
def test_bad_output_paths_fail_when_parsed(argv, message, tmp_path, capsys):
    (tmp_path / "file").write_text("")
    with pytest.raises(SystemExit) as exit_:
        parser().parse_args([a.format(tmp=tmp_path) for a in argv])
    assert exit_.value.code == 2
    assert message in capsys.readouterr().err


@pytest.fixture
def missing(monkeypatch):
    """`missing(name)`: the package `name` looks uninstalled."""
    find_spec = importlib.util.find_spec

    def hide(name):
        monkeypatch.setattr(
            importlib.util,
            "find_spec",
            lambda wanted, *a: None if wanted == name else find_spec(wanted, *a),
        )

    return hide


def test_without_tensorboard_the_option_says_what_to_install(missing, capsys):
    missing("tensorboard")
    with pytest.raises(SystemExit) as exit_:
        parser().parse_args(["--tensorboard", "logs"])
    assert exit_.value.code == 2
    err = capsys.readouterr().err
    assert (
        "--tensorboard: writing TensorBoard logs needs the tensorboard package" in err
    )
    assert 'pip install ".[research]"' in err


def test_without_matplotlib_the_plot_fails_before_training(missing, capsys):
    missing("matplotlib")
    args = parser().parse_args([])
    with pytest.raises(SystemExit) as exit_:
        monitoring.png_path(args)
    assert exit_.value.code == 2
    assert "the plot (--png) needs matplotlib" in capsys.readouterr().err


def test_save_json_leaves_the_whole_file_only(tmp_path):
    path = tmp_path / "deep" / "r.json"
    monitoring.save_json({"a": [1, 2], "p": tmp_path}, path)
    assert json.loads(path.read_text()) == {"a": [1, 2], "p": str(tmp_path)}
    assert [p.name for p in path.parent.iterdir()] == ["r.json"]


def test_save_json_keeps_a_list_of_scalars_on_one_line(tmp_path):
    data = {
        "seeds": [0, 1, 2], "mse": [0.5, None, 1e-7], "flags": {"1e-05": [True, False]},
        "rows": [{"a": [1, "x]\n,y"]}, {"b": []}], "nested": [[1, 2], [3]],
        "text": ["a,\n b", "[c]"],
    }  # fmt: skip
    path = tmp_path / "r.json"
    monitoring.save_json(data, path)
    text = path.read_text()
    assert json.loads(text) == data
    assert '"seeds": [0, 1, 2]' in text and '"mse": [0.5, null, 1e-07]' in text
    assert '"1e-05": [true, false]' in text and '"nested": [\n' in text


@pytest.mark.research  # TensorBoard is in the research extra
def test_tensorboard_scalars_write_the_finite_numbers_at_their_step(tmp_path):
    log = monitoring.TensorBoardScalars(tmp_path / "run", prefix="train/")
    log.write(10, {"loss": 0.5, "digits": np.float32(95.0), "note": "text"})
    log.write(20, {"loss": float("nan"), "digits": 97})
    log.close()
    assert tensorboard_scalars(tmp_path) == {
        "run": {"train/loss": [10], "train/digits": [10, 20]}
    }


def test_a_markdown_table_has_its_header_separator_and_rows():
    lines = monitoring.markdown_table(["op", "NAU"], [["a+b", 0.5], ("a*b", "")])
    assert lines == ["| op | NAU |", "|---|---|", "| a+b | 0.5 |", "| a*b | |"]
    assert monitoring.markdown_table(["a"], []) == ["| a |", "|---|"]


@pytest.mark.parametrize("row", [["a+b"], ["a+b", 1, 2]])
def test_a_row_without_a_cell_for_each_column_is_refused(row):
    with pytest.raises(
        ValueError, match=rf"`rows\[1\]`, expected 2 cells.*has {len(row)}"
    ):
        monitoring.markdown_table(["op", "NAU"], [["a*b", 1], row])


def test_a_run_length_of_whole_epochs_is_left_out_of_the_resume_check():
    assert runs.resumed_total(16000, 2000) is None
    assert runs.resumed_total(16500, 2000) == 16500
    assert runs.resumed_total(95, 10) == 95


def test_a_longer_kept_checkpoint_ends_the_script_naming_the_option(capsys):
    with pytest.raises(SystemExit) as exit_:
        with runs.exits_on_longer_checkpoint("--steps", "ckpt/sum/nau", 2000):
            raise CheckpointAheadError(8, 13, "ckpt/sum/nau")
    assert exit_.value.code == 2
    assert capsys.readouterr().err.endswith(
        "error: argument --steps: the checkpoint in ckpt/sum/nau holds 26,000 of "
        "this run; pass --steps 26000 or more, or another --checkpoint-dir\n"
    )
    with pytest.raises(ValueError, match="other"):  # other errors pass through
        with runs.exits_on_longer_checkpoint("--steps", "ckpt", 1):
            raise ValueError("other")


def test_keep_checkpoint_says_which_option_continues_a_kept_run(capsys):
    parser = argparse.ArgumentParser(prog="x.py")
    add_training_arguments(parser, "x", continued_by="--updates")
    assert parser.parse_args(["--keep-checkpoint"]).keep_checkpoint
    with pytest.raises(SystemExit):
        parser.parse_args(["--help"])
    help_text = " ".join(capsys.readouterr().out.split())
    assert "and with more --updates continues them" in help_text
    engine = argparse.ArgumentParser(prog="x.py")
    add_training_arguments(engine, "x", keep=False)
    assert "keep_checkpoint" not in vars(engine.parse_args([]))
