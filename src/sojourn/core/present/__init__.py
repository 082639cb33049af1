"""The top floor: figures, tables and words from data (claims). Imports the rooms below it."""
