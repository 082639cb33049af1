"""Checks of a run's generated captions (sojourn.core.present.claims): every figure has one, every claim in it is
re-derived
from the file it names, and every figure fits the report page."""
from __future__ import annotations

from pathlib import Path

from sojourn.core.files.io import read_netcdf
from sojourn.core.present.claims import caption_sentences, read_claims, verify
from sojourn.core.present.figures import MAX_WIDTH_PX


def check_captions(study_dir) -> int:
    """Every PNG under ``study_dir`` has its caption ``<stem>.rst``, each caption's claims agree with the data they
    name (relative to ``study_dir``), each claim's sentence is in the caption, and no PNG is wider than the report
    page; returns the number of claims checked."""
    from PIL import Image

    study_dir = Path(study_dir)
    cache: dict = {}

    def source(name):
        if name not in cache:
            cache[name] = read_netcdf(study_dir / name)
        return cache[name]

    pngs = sorted(study_dir.rglob("figures/*.png"))
    assert pngs, f"no figures under {study_dir}"
    n = 0
    for png in pngs:
        assert Image.open(png).size[0] <= MAX_WIDTH_PX, f"{png.name} is {Image.open(png).size[0]} px wide"
        assert png.with_suffix(".rst").is_file(), f"{png.name} has no caption"
    captions = sorted(p for p in study_dir.rglob("*.rst") if "cache" not in p.parts)
    for rst in captions:
        text = caption_sentences(rst).replace("\\", "")
        for claim in read_claims(rst):
            ok, derived = verify(claim, source)
            assert ok, f"{rst.name}: {claim.text!r} states {claim.value!r}, the data say {derived!r}"
            assert claim.text in text, f"{rst.name}: the claim {claim.text!r} is not in the caption"
            n += 1
    return n
