"""Which documented rules hold in which TensorRT version, and which ruleset predicts each target's version."""
import pytest

from harness.scan.engine_prediction.rules import RULES, RULESETS, SEEN_IN_ENGINES, ruleset_for


@pytest.mark.parametrize(("version", "ruleset", "noted"), [
    ("8.5.2", "trt-8.6", True), ("8.6.1", "trt-8.6", False), ("9.2.0", "trt-8.6", True), ("10.0.1", "trt-10.0", False),
    ("10.7.0", "trt-10.0", False), ("10.8", "trt-10.8", False), ("10.16", "trt-10.12", False), ("11", "trt-11", False),
    ("11.4.1", "trt-11", False), (None, "trt-11", True),
])
def test_each_version_is_predicted_with_the_nearest_documented_rules_at_or_below_it(version, ruleset, noted):
    choice = ruleset_for(version)
    assert choice.ruleset.name == ruleset
    assert bool(choice.note) == noted


def test_rules_change_where_the_documentation_says():
    by_name = {r.name: r for r in RULESETS}
    assert not by_name["trt-8.6"].has("fp8-qdq") and by_name["trt-10.0"].has("fp8-qdq")
    assert not by_name["trt-10.0"].has("fp4-qdq") and by_name["trt-10.8"].has("fp4-qdq")
    assert by_name["trt-10.12"].has("weakly-typed-float") and not by_name["trt-11"].has("weakly-typed-float")
    assert by_name["trt-11"].strongly_typed_only and not by_name["trt-10.12"].strongly_typed_only


def test_every_rule_names_its_source_section_and_link():
    for rule in RULES.values():
        assert rule.section and rule.link and rule.text, rule.id
        assert rule.link.startswith("https://docs.nvidia.com/") or rule.section == SEEN_IN_ENGINES, rule.id
