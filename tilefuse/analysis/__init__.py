"""Analyses that decide and never rewrite IR: the dataflow graph, pattern matchers, the
cost model (`cost/`), and the fusion, horizontal and tile planners."""
