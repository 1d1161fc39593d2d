"""`python -m tests.support.llama_backend`: see cli.py."""

import sys

from tests.support.llama_backend.cli import main

sys.exit(main())
