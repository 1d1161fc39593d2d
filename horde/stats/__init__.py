"""Served counts by minute, kept by the sweeper, so that the stats endpoints read a few rows, never the history.

A series (chat requests served, text generations submitted) is rolled up minute by minute into cumulative
counts (models.py, rollup.py); a window's count is the difference of two cumulative counts plus the few raw rows
at its edges (windows.py). See docs/decisions/0026-served-counts-rolled-up-by-minute.md.
"""
