"""`python -m dra_migrate ...`: the same command line as the `dra-migrate` entry point."""

import sys

from dra_migrate.cli import main

sys.exit(main())
