"""OpenLRU (vidlabel._lru): the one set of open readers per process; RowColumns' one column list."""

from __future__ import annotations

import os
import pickle

import numpy as np
import pytest

from vidlabel._lru import OpenLRU
from vidlabel.dataset._rows import BATCH_COLUMNS, RowColumns
from vidlabel.spec import AnnotationTable


class Handle:
    def __init__(self, key: str, log: list[str]) -> None:
        self.key = key
        self.log = log
        log.append(f"open {key}")

    def close(self) -> None:
        self.log.append(f"close {self.key}")


def test_opens_once_and_closes_the_least_recently_used() -> None:
    log: list[str] = []
    lru: OpenLRU[str, Handle] = OpenLRU(2)

    def open_(k: str) -> Handle:
        return Handle(k, log)

    a = lru.get("a", open_)
    lru.get("b", open_)
    assert lru.get("a", open_) is a  # a hit: not opened again, now the most recent
    lru.get("c", open_)  # closes b, the least recently used
    assert log == ["open a", "open b", "open c", "close b"]
    assert len(lru) == 2
    lru.close()
    assert log[-2:] == ["close a", "close c"] and len(lru) == 0


def test_peek_neither_opens_nor_reorders() -> None:
    log: list[str] = []
    lru: OpenLRU[str, Handle] = OpenLRU(2)

    def open_(k: str) -> Handle:
        return Handle(k, log)

    a = lru.get("a", open_)
    lru.get("b", open_)
    assert lru.peek("a") is a and lru.peek("z") is None
    lru.get("c", open_)  # a stays the least recently used: peek did not make it recent
    assert log == ["open a", "open b", "open c", "close a"]


def test_a_forked_child_drops_the_parents_handles_without_closing_them() -> None:
    log: list[str] = []
    lru: OpenLRU[str, Handle] = OpenLRU(2)
    parent = lru.get("a", lambda k: Handle(k, log))
    lru._pid = os.getpid() + 1  # as in a child after fork: the handles were opened by another process
    assert len(lru) == 0
    lru.close()
    assert log == ["open a"]  # not closed: the parent's
    lru._pid = os.getpid() + 1
    child = lru.get("a", lambda k: Handle(k, log))
    assert child is not parent and log == ["open a", "open a"]


def test_pickles_as_its_capacity_only() -> None:
    lru: OpenLRU[str, Handle] = OpenLRU(3)
    lru.get("a", lambda k: Handle(k, []))
    copy = pickle.loads(pickle.dumps(lru))
    assert copy.capacity == 3 and len(copy) == 0


def test_capacity_below_one_is_refused() -> None:
    with pytest.raises(ValueError, match="capacity must be >= 1, got 0"):
        OpenLRU(0)


def test_row_columns_are_annotation_tables_less_the_two_the_dataset_assigns() -> None:
    assert set(BATCH_COLUMNS) == set(AnnotationTable.DTYPES) - {"annotation_id", "video"}
    cols = RowColumns({name: np.zeros(1 if name == "mask_offsets" else 0) for name in BATCH_COLUMNS})
    assert cols.n_rows == 0
    assert {k: v.dtype for k, v in cols.items()} == {k: np.dtype(AnnotationTable.DTYPES[k]) for k in BATCH_COLUMNS}
    with pytest.raises(ValueError, match=r"RowColumns needs the columns \('kind', 'label'"):
        RowColumns({"kind": np.zeros(0)})
