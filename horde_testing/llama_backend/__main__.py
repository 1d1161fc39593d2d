"""`python -m horde_testing.llama_backend`: see cli.py."""

import sys

from horde_testing.llama_backend.cli import main

sys.exit(main())
