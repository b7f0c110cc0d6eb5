"""The commands of `hta-fast`, one module per command or family of commands; each is
imported when one of its commands runs (hta_fast.cli.app.COMMANDS)."""
