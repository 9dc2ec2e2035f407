"""Run folders, tables and plots."""
