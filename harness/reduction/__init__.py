"""``trt-matrix reduce``: shrink a model that fails on a target to the smallest subgraph that fails the same way
(polygraphy's ``debug reduce`` driving checks that run each candidate through the harness), then write it as a case."""
