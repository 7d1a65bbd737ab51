"""The experiments' models: one module per family of experiments, building
the Keras models an experiment trains (their data is in
`nalu_research.tasks`, their command lines in `nalu_research.experiments`).
"""
