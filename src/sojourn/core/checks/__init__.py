"""What comes in, checked before any compute: the input guard, value checks, command-line inputs and flags,
config schemas, units and the time grid. Imports only the files below it."""
