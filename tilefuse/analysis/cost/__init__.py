"""
The cost model: GPU targets, occupancy, roofline times and tile-schedule simulation.

Everything here is plain Python over numbers (no IR), so the fusion and tiling
passes can ask "how long would this kernel take on that GPU" cheaply.
"""
