"""`python -m golem` runs the CLI."""

from golem.cli.app import main

main()
