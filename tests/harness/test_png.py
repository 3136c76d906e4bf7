"""`support/png.py`: the PNG reader of the browser tests reads every filter of 8-bit RGB and RGBA images, and
refuses what it does not read."""

import struct
import zlib

import pytest

from support.png import SIGNATURE, _paeth, read_png

PIXELS = [[(255, 0, 0), (0, 255, 0), (0, 0, 255), (12, 34, 56)],
          [(200, 100, 50), (1, 2, 3), (255, 255, 255), (0, 0, 0)],
          [(7, 7, 7), (250, 5, 128), (64, 32, 16), (99, 199, 9)]]


def chunk(kind, body):
    return struct.pack(">I", len(body)) + kind + body + struct.pack(">I", zlib.crc32(kind + body))


def filtered(kind, line, previous, channels):
    """`line` filtered with PNG filter `kind`, as an encoder writes it."""
    out = bytearray()
    for index, value in enumerate(line):
        left = line[index - channels] if index >= channels else 0
        up = previous[index]
        corner = previous[index - channels] if index >= channels else 0
        predicted = (0, left, up, (left + up) // 2, _paeth(left, up, corner))[kind]
        out.append((value - predicted) & 0xFF)
    return bytes(out)


def write_png(path, rows, filters, alpha=False, depth=8, interlace=0):
    channels = 4 if alpha else 3
    raw, previous = b"", bytes(len(rows[0]) * channels)
    for row, kind in zip(rows, filters):
        line = bytes(value for pixel in row for value in (*pixel, 255)[:channels])
        raw += bytes([kind]) + filtered(kind, line, previous, channels)
        previous = line
    header = struct.pack(">IIBBBBB", len(rows[0]), len(rows), depth, 6 if alpha else 2, 0, 0, interlace)
    path.write_bytes(SIGNATURE + chunk(b"IHDR", header) + chunk(b"IDAT", zlib.compress(raw)) + chunk(b"IEND", b""))
    return path


@pytest.mark.parametrize("filters", [(0, 0, 0), (1, 2, 3), (4, 4, 4), (2, 1, 0), (3, 4, 1)])
@pytest.mark.parametrize("alpha", [False, True])
def test_every_filter_is_undone(tmp_path, filters, alpha):
    assert read_png(write_png(tmp_path / "p.png", PIXELS, filters, alpha)) == PIXELS


def test_what_it_does_not_read_is_refused(tmp_path):
    (tmp_path / "text.png").write_bytes(b"not a png")
    with pytest.raises(ValueError, match="not a PNG"):
        read_png(tmp_path / "text.png")
    with pytest.raises(ValueError, match="interlace 1"):
        read_png(write_png(tmp_path / "p.png", PIXELS, (0, 0, 0), interlace=1))
