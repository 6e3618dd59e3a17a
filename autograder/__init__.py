"""The course autograder: `python -m autograder --help`."""
