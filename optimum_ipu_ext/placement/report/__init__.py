"""A placement as data (`Placement`, `IPUPlacement`) and as text, in `placement`; as SVG pictures and table rows
for a page or a model card, in `pictures`; as one self-contained HTML page, in `page`.

May import: `placement.estimate`, `placement.models`, `placement.hardware`.
"""
