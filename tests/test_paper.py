"""The paper's tables read from nalu_research/paper.json, the one copy."""

import math

import pytest

from nalu_research import paper
from nalu_research.tasks.identity import PAPER_TABLE_5
from nalu_research.tasks.mnist import PAPER_TABLE_2, PAPER_TABLE_4
from nalu_research.tasks.number_words import PAPER_FIGURE_3, PAPER_TABLE_3
from nalu_research.tasks.recurrent_arithmetic import PAPER_TABLE_1_RECURRENT
from nalu_research.tasks.static_arithmetic import PAPER_TABLE_1

pytestmark = pytest.mark.research


def test_the_tasks_read_the_paper_file():
    assert PAPER_TABLE_1 == paper.table("table_1_static")
    assert PAPER_TABLE_1_RECURRENT == paper.table("table_1_recurrent")
    assert PAPER_TABLE_2 == paper.table("table_2")
    assert PAPER_TABLE_3 == paper.table("table_3")
    assert PAPER_TABLE_4 == paper.table("table_4")
    assert PAPER_TABLE_5 == paper.table("table_5")
    assert "Trask" in paper.SOURCE


def test_spot_values_of_the_paper():
    # Checked against the paper's PDF (../shared/reference).
    assert PAPER_TABLE_1["nalu"]["div"] == (5.3, 0.7)
    assert PAPER_TABLE_1["linear"]["mul"] == (20.9, 29.5)
    assert PAPER_TABLE_1_RECURRENT["nac"]["div"] == (1.2, math.inf)
    assert PAPER_TABLE_2["sum"]["rnn_relu"] == (88.18, 19.1, 182.1, 1171.0)
    assert PAPER_TABLE_3["LSTM + NALU"] == (0.12, 0.39, 0.41)
    assert PAPER_TABLE_4 == {
        "Wx+b": 88.1, "sigmoid(W)x+b": 60.0, "tanh(W)x+b": 87.6, "Wx+0": 91.4,
        "sigmoid(W)x+0": 62.5, "tanh(W)x+0": 88.7, "NAC": 93.1,
    }  # fmt: skip
    assert PAPER_FIGURE_3["eighty eight"] == (79.6, 88.0)


def test_an_unknown_table_is_refused_by_name():
    with pytest.raises(ValueError, match=r"table='table_9'.*known: \['figure_3'"):
        paper.table("table_9")
    with pytest.raises(ValueError, match="table='source'"):
        paper.table("source")
