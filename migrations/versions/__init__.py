"""Revision scripts, one per schema change (a package so that installs ship them)."""
