"""Simulation backends for the JSQ-PS model: a numba event kernel and a Ciw reference."""
