"""The integrity report: statistical signals of collusion between pairs of players."""
