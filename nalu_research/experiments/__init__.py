"""One module per experiment: its options, training, table, plot and export.

Each has a `main(argv=None)`; `examples/NAME.py` is its command line.
"""
