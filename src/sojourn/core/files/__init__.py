"""Files on disk, the ground floor: atomic writes and sha256 sidecars (integrity), netCDF with provenance
(io), the content-keyed cache, code fingerprints (rerun triggers) and the streaming merge. Imports no other room."""
