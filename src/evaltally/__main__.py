"""`python -m evaltally` is `tally`."""

from evaltally.cli import main

main()
