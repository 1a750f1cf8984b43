"""The command line, one module per command group: argument parsing, printing and exit codes, nothing else."""
