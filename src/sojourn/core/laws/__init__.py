"""Service laws and random streams: distributions, phase-type algebra and fitting, the laws inside numba kernels
(sampling, PH walks, inline SFC64) and the seeds. Imports the rooms below it (checks, files)."""
