"""One module per evidence basis, each with ``produce(form, target, sources, scope) -> list[Evidence]``; the order
they are tried and the basis each gives is :data:`harness.evidence.registry.PRODUCERS`."""
