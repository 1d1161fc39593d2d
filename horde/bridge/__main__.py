"""`python -m horde.bridge ...`: the same worker as `python -m horde worker ...`."""

import sys

from horde.bridge.cli import main

sys.exit(main(sys.argv[1:]))
