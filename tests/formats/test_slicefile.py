"""The slice file format: canonical bytes, strict parsing with line numbers, splitting."""

from __future__ import annotations

import pytest

from patchlane.errors import InputError
from patchlane.formats import slicefile
from patchlane.formats.slicefile import SliceError, parse, render, split_slice

IDS = ["tests/test_b.py::test_x", "tests/test_a.py::test_y[1]", "tests/test_a.py::T::test_z"]


def test_render_sorts_dedupes_and_terminates_every_line() -> None:
    data = render([*IDS, IDS[0]])
    assert data == (
        b"tests/test_a.py::T::test_z\ntests/test_a.py::test_y[1]\ntests/test_b.py::test_x\n"
    )
    assert render(reversed(IDS)) == data  # order of input never matters
    assert slicefile.sha256(data) == slicefile.sha256(render(sorted(IDS)))


def test_empty_slice_is_the_empty_file() -> None:
    assert render([]) == b""
    assert parse(b"", "s.txt") == ()


def test_parse_round_trips_render() -> None:
    data = render(IDS)
    assert parse(data, "s.txt") == tuple(sorted(IDS))
    assert render(parse(data, "s.txt")) == data


def test_sort_order_is_python_str_order() -> None:
    # Upper case sorts before lower case, '[' between them: code points, not locale.
    ids = ["t/a.py::t[b]", "t/a.py::tB", "t/a.py::t_a", "t/a.py::ta", "t/ä.py::t"]
    assert parse(render(ids), "s") == tuple(sorted(ids))


@pytest.mark.parametrize(
    ("data", "line", "words"),
    [
        (b"t/a.py::x\r\n", 1, "CR"),
        (b"t/a.py::x\n\nt/b.py::y\n", 2, "blank line"),
        (b"t/b.py::y\nt/a.py::x\n", 2, "not sorted"),
        (b"t/a.py::x\nt/a.py::x\n", 2, "duplicate"),
        (b"t/a.py::x\nt/b.py::y", 2, "missing final newline"),
        (b"t/a.py::\n", 1, "not a node id"),
        (b"../a.py::x\n", 1, "'..'"),
        (b"/abs/a.py::x\n", 1, "absolute"),
        (b"t\\a.py::x\n", 1, "backslash"),
        (b"t/a.py::x\nt/b.py::\xff\n", 2, "not UTF-8"),
        (b"t/a.py::x\tz\n", 1, "unprintable"),
    ],
)
def test_parse_refuses_non_canonical_slices_with_file_and_line(
    data: bytes, line: int, words: str
) -> None:
    with pytest.raises(SliceError) as e:
        parse(data, "replay-slice.txt")
    assert isinstance(e.value, InputError)
    assert e.value.file == "replay-slice.txt"
    assert e.value.line == line
    assert words in e.value.message
    assert str(e.value).startswith(f"replay-slice.txt:{line}: ")


@pytest.mark.parametrize("bad", ["t/a.py::x\ny", "t/a.py::", "", "../t.py::x", "t/a.py::x\r"])
def test_render_refuses_what_parse_would_refuse(bad: str) -> None:
    with pytest.raises(SliceError):
        render([bad])


def test_split_is_deterministic_disjoint_and_covers_the_slice() -> None:
    ids = [f"tests/test_{i:02d}.py::t" for i in range(23)]
    for n in (1, 2, 3, 7, 23, 40):
        shards = split_slice(ids, n)
        assert shards == split_slice(list(reversed(ids)), n)  # input order is irrelevant
        assert len(shards) == n
        flat = [x for s in shards for x in s]
        assert sorted(flat) == sorted(ids)  # union is the slice, nothing twice
        assert len(flat) == len(set(flat))
        sizes = [len(s) for s in shards]
        assert max(sizes) - min(sizes) <= 1
        for s in shards:
            assert list(s) == sorted(s)
            assert parse(render(s), "shard") == s  # each shard is a valid slice


def test_split_is_round_robin_over_sorted_ids() -> None:
    assert split_slice(["c::x", "a::x", "b::x", "d::x"], 2) == [("a::x", "c::x"), ("b::x", "d::x")]


def test_split_refuses_zero_shards() -> None:
    with pytest.raises(ValueError, match="at least 1"):
        split_slice(["a::x"], 0)


def test_a_files_own_id_is_a_slice_line() -> None:
    # A test file that does not collect at the head stands for all its tests by its own id.
    assert parse(b"t/a.py::x\nt/b.py\n", "slice") == ("t/a.py::x", "t/b.py")
