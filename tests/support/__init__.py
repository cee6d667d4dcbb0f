"""What the tests share, one job per module:

paths        where the repository, the plugin folder and the shared Multi30k files are
tiny         tiny models built in Python, and the same sizes as fairseq-train flags
tools        fairseq's command-line tools run as a user runs them
assertions   what every one-line error must look like
training     the fairseq-train command of the tests' checkpoints
demo_data    the binarized demo corpus the session's fixtures train and translate
"""
