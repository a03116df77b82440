"""``python -m vidlabel`` runs the command line."""

import sys

from vidlabel.cli import main

sys.exit(main())
