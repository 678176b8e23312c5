"""`python -m host.cli ...` runs `walkerlab ...`."""
import sys

from host.cli import main

sys.exit(main())
