"""Statistics of runs: CDFs and confidence intervals, summaries, run lengths, the precision-driven stopping
rule, the reference rule, replication windows and the kernels' time recorder. Imports the rooms below it."""
