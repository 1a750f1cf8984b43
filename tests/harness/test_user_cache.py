"""What a command derives from a file is kept in the user's cache for the next command: read back, never a stale
value for changed bytes, and derived anyway where the cache is damaged or cannot be written."""
from __future__ import annotations

import pytest

from harness import user_cache


@pytest.fixture
def cache(tmp_path, monkeypatch):
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "cache"))
    return tmp_path / "cache" / "trt-matrix"


def counting(value):
    calls = []

    def derive():
        calls.append(1)
        return value
    return derive, calls


def test_a_value_is_derived_once_then_read_back(cache):
    derive, calls = counting({"Builder": ["build", "INT8"]})
    assert user_cache.derived("names", b"surface 1", derive) == {"Builder": ["build", "INT8"]}
    assert user_cache.derived("names", b"surface 1", derive) == {"Builder": ["build", "INT8"]}
    assert len(calls) == 1 and len(list(cache.glob("names-*.json"))) == 1


def test_other_bytes_are_derived_anew_and_a_damaged_entry_is_derived_again(cache):
    first, _ = counting(["a"])
    user_cache.derived("names", b"surface 1", first)
    other, calls = counting(["b"])
    assert user_cache.derived("names", b"surface 2", other) == ["b"] and len(calls) == 1
    user_cache.entry_path("names", b"surface 2").write_text("{not json")
    assert user_cache.derived("names", b"surface 2", other) == ["b"] and len(calls) == 2


def test_without_a_writable_cache_the_value_is_derived_each_time(tmp_path, monkeypatch):
    (tmp_path / "file").write_text("not a directory")
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "file"))
    derive, calls = counting([1, 2])
    assert user_cache.derived("names", b"x", derive) == [1, 2] == user_cache.derived("names", b"x", derive)
    assert len(calls) == 2


def test_what_json_does_not_hold_exactly_is_not_kept(cache):
    derive, calls = counting({"pair": (1, 2)})  # a tuple would come back a list
    user_cache.derived("names", b"x", derive)
    user_cache.derived("names", b"x", derive)
    assert len(calls) == 2 and not list(cache.glob("names-*.json"))


def test_each_kind_keeps_its_newest_entries_only(cache, monkeypatch):
    monkeypatch.setattr(user_cache, "KEPT", 3)
    user_cache.derived("other", b"kept", lambda: "other kind")
    for n in range(5):
        user_cache.derived("matrix", f"edit {n}".encode(), lambda: n)
    kept = sorted(path.name for path in cache.glob("matrix-*.json"))
    assert kept == sorted(user_cache.entry_path("matrix", f"edit {n}".encode()).name for n in (2, 3, 4))
    assert user_cache.entry_path("other", b"kept").exists()
