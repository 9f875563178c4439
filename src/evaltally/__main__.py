"""`python -m evaltally` is `tally`."""

from evaltally.startup import main

main()
