"""The study protocol and its driver: the cell runner, the job convention and progress lines. Imports the rooms
below it."""
