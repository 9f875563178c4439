"""`python -m evaltally.mockserver [options]`: the mock provider without the root CLI."""

from evaltally.mockserver.cli import main

main()
