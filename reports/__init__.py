"""The HTML compatibility matrix: results files in, one self-contained report out."""
