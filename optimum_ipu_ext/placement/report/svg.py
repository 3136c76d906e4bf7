"""The few SVG shapes the pictures are drawn with, hand-written, every text escaped: elements, text, its width and its
lines, the coordinates as written, round steps for an axis, the colours and the mark of the files this package
writes (a command overwrites a picture or a page that has it). Nothing is imported but the standard library, so a
command pays for a picture only when it draws one."""

import html
from typing import Any, List, Optional

from ..estimate.memory import Verdict

# the first line of every picture and page the package writes: `place` overwrites a file that has it
GENERATOR = "optimum-ipu-ext"
SVG_MARK = f"<!-- Generator: {GENERATOR} -->"
HTML_MARK = f'<meta name="generator" content="{GENERATOR}">'
FONT = "DejaVu Sans, Arial, Helvetica, sans-serif"
INK, MUTED, PAPER = "#1a1a1a", "#555555", "#ffffff"
# each verdict's colour
VERDICT_COLOURS = {Verdict.FITS: "#2e7d32", Verdict.TIGHT: "#a86400", Verdict.DOES_NOT_FIT: "#c62828"}
MARGIN = 24


def esc(text: Any) -> str:
    """`text` escaped for XML and HTML, in content and in attributes."""
    return html.escape(str(text), quote=True)


def written_here(head: str) -> bool:
    """Whether a file that begins with `head` (its first kilobytes) is a picture or a page this package wrote."""
    return SVG_MARK in head or HTML_MARK in head


def coordinate(value: float) -> str:
    """A coordinate: to a tenth of a pixel, without a useless `.0`."""
    text = f"{value:.1f}"
    return text[:-2] if text.endswith(".0") else text


def _value(value: Any) -> str:
    return coordinate(value) if isinstance(value, float) else esc(value)


def element(tag: str, content: Optional[str] = None, **attributes: Any) -> str:
    """One element; `font_size=11` is written `font-size="11"`, a None attribute is left out, `content` is markup
    (escape text with `esc`)."""
    written = " ".join(f'{name.rstrip("_").replace("_", "-")}="{_value(value)}"'
                       for name, value in attributes.items() if value is not None)
    opening = f"<{tag} {written}" if written else f"<{tag}"
    return f"{opening}/>" if content is None else f"{opening}>{content}</{tag}>"


def picture(width: float, height: float, label: str, kind: str, title: str, body: List[str],
            definitions: Optional[str] = None) -> str:
    """A whole SVG file: `body` on a page of `width` x `height`, its accessible `label`, its `kind` (`data-kind`)
    and `title`, the pattern `definitions` it draws with where it has some; the package's mark on its second line."""
    return "\n".join([
        f'<svg xmlns="http://www.w3.org/2000/svg" width="{coordinate(width)}" height="{coordinate(height)}" '
        f'viewBox="0 0 {coordinate(width)} {coordinate(height)}" font-family="{FONT}" role="img" '
        f'aria-label="{esc(label)}" data-kind="{kind}">',
        SVG_MARK,
        element("title", esc(title)),
        *([definitions] if definitions is not None else []),
        element("rect", x=0, y=0, width=float(width), height=float(height), fill=PAPER),
        *body,
        "</svg>",
        "",
    ])


def text(x: float, y: float, content: str, size: float = 11, anchor: str = "start", fill: str = INK,
         weight: Optional[str] = None, **attributes: Any) -> str:
    """A line of text at (x, y), its baseline at y."""
    return element("text", esc(content), x=float(x), y=float(y), font_size=size, text_anchor=anchor, fill=fill,
                   font_weight=weight, **attributes)


def text_width(content: str, size: float, bold: bool = False) -> float:
    """About the width of `content` in the sans-serif face at `size` pixels, for layout (a little over, rather than
    under: capitals and digits are wider than small letters, spaces and stops narrower)."""
    ems = sum(0.7 if char.isupper() else 0.64 if char.isdigit() else 0.34 if char in " ,.:;'()[]-" else 0.57
              for char in content)
    return ems * size * (1.12 if bold else 1.0)


def wrap(content: str, width: float, size: float, separator: str = ", ", bold: bool = False) -> List[str]:
    """`content` in lines of at most `width` pixels, broken after `separator`, and where a piece is still too wide,
    between its words (a word wider than a line stays whole)."""
    words = content.split(separator)
    pieces = []
    for index, word in enumerate(words):
        piece = word + (separator.rstrip() if index < len(words) - 1 else "")
        pieces += [piece] if text_width(piece, size, bold) <= width or " " not in piece.strip() else piece.split()
    lines: List[str] = []
    for piece in pieces:
        if lines and text_width(lines[-1] + " " + piece, size, bold) <= width:
            lines[-1] += " " + piece
        else:
            lines.append(piece)
    return lines


def nice_step(largest: float, ticks: int = 6) -> float:
    """A round step (1, 2, 2.5 or 5 times a power of ten) that divides 0..largest into at most about `ticks`."""
    step = 1.0
    while largest / step > ticks:
        for factor in (2, 2.5, 2):
            step *= factor
            if largest / step <= ticks:
                break
    return step
