"""``python -m bpetrain``: the command line (:mod:`bpetrain.cli`)."""
import sys

from bpetrain.cli import main

sys.exit(main())
