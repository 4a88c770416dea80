"""One module per CLI command; ``cli.COMMANDS`` maps names to them."""
