"""The score of the mutation run (mutation.py): documented equivalent mutants are left out only while they still are
the mutation their entry describes and no test detects them; everything else counts."""
from tests.harness.worker.backends.tensorrt.mutation import (
    Equivalent,
    module_of,
    mutated_lines,
    parse_results,
    score,
)

CLASSIFY = "harness.tensorrt.classify"
RESULTS = f"""    {CLASSIFY}.x_parse_log_line__mutmut_1: killed
    {CLASSIFY}.x_parse_log_line__mutmut_2: survived
    {CLASSIFY}.x_classify_log__mutmut_3: no tests
    {CLASSIFY}.x_classify_log__mutmut_4: timeout
    harness.tensorrt.layers.x__widest__mutmut_1: skipped
"""
DIFF = """--- harness/tensorrt/classify.py
+++ harness/tensorrt/classify.py
@@ -1,6 +1,6 @@
 def parse_log_line(line: str) -> LogLine:
-    rest = line.rstrip("\\r\\n")
+    rest = line.rstrip(None)
"""


def test_results_are_read_per_mutant():
    statuses = parse_results("some banner\n" + RESULTS)
    assert statuses[f"{CLASSIFY}.x_parse_log_line__mutmut_2"] == "survived"
    assert statuses[f"{CLASSIFY}.x_classify_log__mutmut_3"] == "no tests"
    assert len(statuses) == 5
    assert module_of(f"{CLASSIFY}.x_classify_log__mutmut_3") == "classify"


def test_killed_and_timed_out_count_as_detected_skipped_is_left_out():
    result = score(parse_results(RESULTS), {}, {})
    assert (result.detected, len(result.counted)) == (2, 4) and result.percent == 50.0
    assert result.undetected == [f"{CLASSIFY}.x_classify_log__mutmut_3", f"{CLASSIFY}.x_parse_log_line__mutmut_2"]
    assert not result.unfinished


def test_a_documented_equivalent_mutant_is_left_out_of_the_score():
    name = f"{CLASSIFY}.x_parse_log_line__mutmut_2"
    assert mutated_lines(DIFF) == ["rest = line.rstrip(None)"]
    result = score(parse_results(RESULTS), {name: Equivalent("rest = line.rstrip(None)", "why")}, {name: DIFF})
    assert name not in result.counted and list(result.equivalent) == [name] and not result.stale
    assert result.percent == 100.0 * 2 / 3


def test_an_entry_whose_mutant_changed_or_is_detected_is_stale_and_counts():
    survived, killed = f"{CLASSIFY}.x_parse_log_line__mutmut_2", f"{CLASSIFY}.x_parse_log_line__mutmut_1"
    entries = {survived: Equivalent("rest = line.rstrip('\\n')", "why"),
               killed: Equivalent("rest = line.rstrip(None)", "why")}
    result = score(parse_results(RESULTS), entries, {survived: DIFF, killed: DIFF})
    assert set(result.stale) == {survived, killed} and not result.equivalent
    assert "rest = line.rstrip(None)" in result.stale[survived] and "killed" in result.stale[killed]
    assert survived in result.undetected


def test_a_run_cut_short_is_reported_unfinished():
    result = score(parse_results(RESULTS + f"    {CLASSIFY}.x_classify_log__mutmut_5: not checked\n"), {}, {})
    assert result.unfinished == [f"{CLASSIFY}.x_classify_log__mutmut_5"]
