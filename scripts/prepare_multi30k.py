#!/usr/bin/env python3
"""Multi30k task 1, English->French: `bahdanau-prepare-data multi30k` under its former name.

example:
  python scripts/prepare_multi30k.py --from-dir ../shared/data/multi30k --out /tmp/multi30k \\
      --bpe 10000
"""

import sys

from bahdanau_plugin.errors import print_errors_as_one_line
from bahdanau_tools.data.command_line import main

if __name__ == "__main__":
    print_errors_as_one_line()  # bad input ends the script with one line, not a traceback
    main(["multi30k", *sys.argv[1:]])
