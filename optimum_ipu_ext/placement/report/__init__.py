"""The reports of a placement and of a plan, each a format written from one typed view (`view`) of the dict their
`to_dict()` gives: the words every format says (`sentences`) and the tables (`tables`), text for a terminal
(`text`), SVG pictures (`svg`'s shapes, `placement_picture`, `plan_picture`), an HTML page (`page`), a model card's
section (`card`).

May import: `placement.estimate`, `placement.models`, `placement.hardware`.
"""
