"""`python -m evaltally.mockserver [options]`: the mock provider without the root CLI."""

from evaltally.cli.mock_server import main

main()
