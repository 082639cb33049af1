"""Where tasks run, never what they compute: Dask clients and the no-workers watchdog, worker plugins, the
Snakemake SLURM glue and process pools. Imports the rooms below it."""
