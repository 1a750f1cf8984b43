"""Run targets inside containers through the docker SDK: one container per target."""
