"""The report's reading of index.json: the variant links (which failing form a variant varies, whether it inherits its
evidence) as the generator writes them, and clear errors for malformed ones."""
from __future__ import annotations

import json

import pytest

from cases import get_case
from cases.generate import generate
from reports.case_index import CaseIndexError, read_index, rows_from_index


def test_links_survive_the_round_trip_through_index_json(tmp_path):
    library = [get_case("p6-linear-int8"), get_case("s4-bn-mish")]
    generate(tmp_path, library)
    written = json.loads((tmp_path / "index.json").read_text())
    assert all({"varies", "inherits"} <= set(v) for case in written["cases"] for v in case["variants"])
    rows = {row.key: row for row in read_index(tmp_path)}
    for case in library:
        for variant in case.variants:
            row = rows[case.id, variant.name]
            assert (row.varies, row.inherits) == (variant.varies, variant.inherits)
    assert rows["p6-linear-int8", "linear-batch-4"].inherits
    assert rows["s4-bn-mish", "qdq-before-native-mish"].varies == "native-mish"


def index_with(**variant_fields) -> dict:
    variant = {"name": "v", "role": "sweep", "mode": "explicit-qdq", **variant_fields}
    return {"format": "trt-matrix/cases/1",
            "cases": [{"id": "c", "title": "t", "pattern": "P0", "variants": [variant]}]}


def test_an_index_written_before_links_reads_as_unlinked():
    (row,) = rows_from_index(index_with(), "old/index.json")
    assert (row.varies, row.inherits) == (None, False)


@pytest.mark.parametrize(("fields", "message"), [
    (dict(varies=3), r"bad/index.json: cases\[0\] \(c\).variants\[0\]: field 'varies' must be a str or NoneType, "
                     r"found a int"),
    (dict(varies="f", inherits="yes"), r"variants\[0\]: field 'inherits' must be a bool, found a str"),
    (dict(varies=None, inherits=True), r"variants\[0\]: field 'inherits' is true but field 'varies' names no failing "
                                       "variant"),
])
def test_malformed_links_name_the_file_and_field(fields, message):
    with pytest.raises(CaseIndexError, match=message):
        rows_from_index(index_with(**fields), "bad/index.json")
