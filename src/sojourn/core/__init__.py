"""The shared core every study uses, nothing study-specific, in seven rooms on floors from the ground up; a module
imports its own room and the rooms below it, never one above (tests/workflow/test_house.py):

``files`` atomic files, checksums, netCDF, the cache, code fingerprints, the streaming merge;
``checks`` the guard, config schemas, inputs, flags, units, the time grid — checked before any compute;
``laws`` service laws, phase-type algebra, the laws inside kernels, random streams and seeds;
``estimates`` statistics of runs: CDFs, CIs, summaries, run length, precision, replications;
``cluster`` where tasks run (Dask clients, the watchdog, SLURM), never what they compute;
``runs`` the study protocol and its driver: the cell runner, jobs, progress;
``present`` figures, tables and words from data.

``version`` and ``exports`` (a package's names imported on first use) stand beside the rooms, leaves any may read."""
