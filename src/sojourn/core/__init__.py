"""The shared core every study uses: laws and phase-type algebra, seeds, the time grid, statistics and
confidence intervals, netCDF I/O with provenance, the streaming merge, the content-keyed cache, Dask
clients and code fingerprints. Nothing here knows about a particular study."""
