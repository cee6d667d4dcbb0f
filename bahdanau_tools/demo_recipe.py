"""The demo's optimizer (scripts/demo.sh trains with it): the fairseq-train options every small run
on the demo corpus shares, in the tests and in the GPU kit, so that they train as the demo does."""

OPTIMIZER = ("--optimizer", "adam", "--lr", "0.01", "--clip-norm", "1.0", "--max-tokens", "2000")
