#!/usr/bin/env python3
"""WMT'14 English->French as in the paper: `bahdanau-prepare-data wmt14` under its former name.

example:
  python scripts/prepare_wmt14.py --out /data/wmt14-en-fr --shortlist 30000 --max-len 50
"""

import sys

from bahdanau_plugin.errors import print_errors_as_one_line
from bahdanau_tools.data.command_line import main

if __name__ == "__main__":
    print_errors_as_one_line()  # bad input ends the script with one line, not a traceback
    main(["wmt14", *sys.argv[1:]])
