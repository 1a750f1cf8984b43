"""Running cells: on local targets (forked processes), in containers (the docker SDK), and as a host's nightly run."""
