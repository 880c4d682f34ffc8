"""Blind expert review of the professional track's expert checks.

Packets (:mod:`icl.review.packets`) hide which submission produced the artifacts; two reviewers grade each
packet 0 / 0.5 / 1 with evidence (on the offline page, :mod:`icl.review.page`); :mod:`icl.review.merge`
measures their agreement (:mod:`icl.review.agreement`), applies a third reviewer's arbitration to the
disagreements and writes one reviews file per submission for :func:`icl.pro.score.score_run`.
"""
