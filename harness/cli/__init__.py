"""The command line: the commands, their help, progress output, reproduce, the output directory lock."""
