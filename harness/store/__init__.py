"""Records at rest: results files (one reader, one writer), run directories, merging hosts, comparing runs, history."""
