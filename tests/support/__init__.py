"""What the tests share, one job per module:

paths        where the repository, the plugin folder and the shared Multi30k files are
models       tiny models over a synthetic vocabulary and their fairseq-train flags (bench/models.py
             builds models of any size)
tools        fairseq's command-line tools run as a user runs them, or a tool's main in this process
assertions   what every one-line error must look like
training     the fairseq-train command of the tests' checkpoints
demo_data    the binarized demo corpus the session's fixtures train and translate
malicious    a checkpoint whose pickle would run code
precision    how far a precision moves the gradients from float64's
png          that a written figure is a PNG image that reads back
"""
