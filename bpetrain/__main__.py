"""``python -m bpetrain``: the command line (:mod:`bpetrain.cli`)."""
import sys

from .cli import main

sys.exit(main())
