"""``python -m vidlabel.cli`` runs the command line, as ``python -m vidlabel`` does."""

import sys

from vidlabel.cli import main

sys.exit(main())
