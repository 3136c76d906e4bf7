"""A placement as data (`Placement`, `IPUPlacement`) and as text, in `placement`.

May import: `placement.estimate`, `placement.models`, `placement.hardware`.
"""
