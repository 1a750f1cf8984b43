"""The scanner's tests share the corpus of test models and the library observed on ort-cpu."""
from tests.models.fixtures import library_results, model_files  # noqa: F401
