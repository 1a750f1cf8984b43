"""A bad cases directory gets an error naming the file and the field, never a silent skip."""
import json
from pathlib import Path

import pytest

from harness.worker.casedata import CasesDirError, damaged_input, load_arrays, load_cells


def rewrite_index(cases_dir, change):
    index = json.loads((cases_dir / "index.json").read_text())
    change(index)
    (cases_dir / "index.json").write_text(json.dumps(index))


def test_a_generated_directory_loads_with_absolute_paths_and_its_arrays(control_cases_dir):
    cells = load_cells(control_cases_dir)
    assert {c["case"] for c in cells} == {"control-qdq-conv-relu", "control-implicit-conv-relu"}
    implicit = next(c for c in cells if c["mode"] == "implicit-int8")
    arrays = load_arrays(implicit)
    assert len(arrays["calibration"]) == implicit["calibration_batches"] > 0
    assert set(arrays["inputs"]) == set(implicit["inputs"]) and arrays["reference"]


def test_a_directory_without_index_says_how_to_make_one(tmp_path):
    with pytest.raises(CasesDirError, match=r"no index.json.*trt-matrix generate"):
        load_cells(tmp_path)


def test_an_index_that_is_not_json_names_the_file(cases_copy):
    (cases_copy / "index.json").write_text("{not json")
    with pytest.raises(CasesDirError, match=r"index.json: not valid JSON"):
        load_cells(cases_copy)


def test_a_wrong_format_names_the_field(cases_copy):
    rewrite_index(cases_copy, lambda index: index.update(format="something-else/9"))
    with pytest.raises(CasesDirError, match=r"field 'format' is 'something-else/9'"):
        load_cells(cases_copy)


def test_a_missing_model_file_names_the_variant_and_the_path(cases_copy):
    index = json.loads((cases_copy / "index.json").read_text())
    model = cases_copy / index["cases"][0]["variants"][0]["model"]
    model.unlink()
    with pytest.raises(CasesDirError) as err:
        load_cells(cases_copy)
    assert f"cases[0] ({index['cases'][0]['id']}).variants[0]: field 'model' names {model}" in str(err.value)


def test_a_field_of_the_wrong_type_is_named(cases_copy):
    rewrite_index(cases_copy, lambda index: index["cases"][1]["variants"][0].update(expected_int8="conv"))
    with pytest.raises(CasesDirError, match=r"cases\[1\].*variants\[0\]: field 'expected_int8' must be a list, found str"):
        load_cells(cases_copy)


def test_a_cell_whose_files_match_the_index_is_not_damaged(control_cases_dir):
    assert [damaged_input(cell) for cell in load_cells(control_cases_dir)] == [None, None, None]


@pytest.mark.parametrize(
    ("damage", "problem"),
    [
        (lambda model, other: model.write_bytes(model.read_bytes()[:100]), "100 bytes, sha256"),
        (lambda model, other: model.write_bytes(b""), "empty (0 bytes)"),
        (lambda model, other: model.write_bytes(other.read_bytes()), "bytes, sha256"),
        (lambda model, other: (model.unlink(), model.mkdir()), "a directory where index.json names the model"),
    ],
    ids=["truncated", "empty", "swapped", "directory"],
)
def test_a_model_changed_after_generate_is_damaged_input_naming_the_file(cases_copy, damage, problem):
    cells = load_cells(cases_copy)
    model, other = Path(cells[0]["model"]), Path(cells[1]["model"])
    damage(model, other)
    reason = damaged_input(cells[0])
    assert reason.startswith(f"{model}: ") and problem in reason
    assert damaged_input(cells[1]) is None


def test_swapped_data_is_damaged_input(cases_copy):
    cells = load_cells(cases_copy)
    Path(cells[0]["data"]).write_bytes(Path(cells[2]["data"]).read_bytes())
    assert damaged_input(cells[0]).startswith(f"{cells[0]['data']}: ")


def test_an_index_without_content_hashes_is_refused(cases_copy):
    rewrite_index(cases_copy, lambda index: index["cases"][0]["variants"][0].pop("model_sha256"))
    with pytest.raises(CasesDirError, match=r"variants\[0\]: field 'model_sha256' must be a str, found NoneType"):
        load_cells(cases_copy)
    rewrite_index(cases_copy, lambda index: index["cases"][0]["variants"][0].update(model_sha256="abc"))
    with pytest.raises(CasesDirError, match=r"field 'model_sha256' must be 64 lower-case hex digits, found 'abc'"):
        load_cells(cases_copy)
