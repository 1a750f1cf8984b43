"""Diagnose's file kinds are one protocol, one module each: every module of harness/diagnosis/kinds is a kind, found
without a list, offered content in the order of its priority, and the diagnosis dispatches to it for its facts and
sentences."""
import importlib
import pkgutil

from harness.diagnosis import kinds
from harness.diagnosis.kinds import KINDS, FileKind


def test_every_module_of_the_folder_is_a_kind_and_none_is_listed_by_hand():
    modules = [m.name for m in pkgutil.iter_modules(kinds.__path__) if not m.name.startswith("_")]
    found = [importlib.import_module(f"harness.diagnosis.kinds.{name}").KIND for name in modules]
    assert all(isinstance(kind, FileKind) for kind in found)
    assert sorted(kind.name for kind in found) == sorted(KINDS)


def test_kinds_are_offered_content_by_priority_and_the_log_is_the_last_resort():
    priorities = [kind.priority for kind in KINDS.values()]
    assert priorities == sorted(priorities) and len(set(priorities)) == len(priorities)
    assert list(KINDS)[-1] == "tensorrt-log"
    assert [name for name, kind in KINDS.items() if kind.facts_when_damaged] == ["tensorrt-log"]


def test_each_kind_says_what_it_is_in_words():
    assert all(kind.text and kind.text[0].islower() for kind in KINDS.values())
    assert len({kind.text for kind in KINDS.values()}) == len(KINDS)
