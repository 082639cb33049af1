"""Shared by every test folder (core/, jsq_ps/, split_merge/, restart/, workflow/): this folder is on sys.path (pytest
puts a rootdir conftest's folder there), so tests import reference code as ``from support.<module> import …``."""
