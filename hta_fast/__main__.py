"""`python -m hta_fast`: the command line (see hta_fast.cli)."""

from .cli import main

main()
