"""``trt-matrix scan MODEL.onnx``: will a user's model build in INT8 on each target, and why.

One concern per module: :mod:`loading` reads and checks the model, :mod:`proto_graph` indexes its protobuf once (for
the engine prediction and, through a view that answers as an onnx-graphsurgeon graph would, for the matchers),
:mod:`summary` describes it, :mod:`matching` finds the library's patterns in it, :mod:`observations` reads the
observed records the user points at, :mod:`prediction` turns evidence into a verdict per target, :mod:`predicted`
words the evidence of a predicted engine (the scan's, and the one ``generate`` writes into each library variant's
index entry for the planning view),
:mod:`extraction` cuts a matched subgraph out of the model, :mod:`reproducers` writes those as a cases directory and
runs them through the harness, :mod:`scanner` ties the steps together; the command (:mod:`harness.commands.scan`)
writes the JSON and renders the HTML page.
"""
