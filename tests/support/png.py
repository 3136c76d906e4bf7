"""PNG screenshots read with the standard library (zlib and struct): the 8-bit RGB and RGBA images without
interlacing that Chromium writes, as rows of (red, green, blue) pixels."""

import struct
import zlib
from typing import List, Tuple

Pixel = Tuple[int, int, int]
SIGNATURE = b"\x89PNG\r\n\x1a\n"


def read_png(path) -> List[List[Pixel]]:
    """The pixels of the PNG at `path`, row by row from the top, alpha dropped."""
    with open(path, "rb") as reader:
        data = reader.read()
    if not data.startswith(SIGNATURE):
        raise ValueError(f"{path}: not a PNG")
    offset, idat, header = len(SIGNATURE), [], None
    while offset < len(data):
        length, kind = struct.unpack(">I4s", data[offset:offset + 8])
        body = data[offset + 8:offset + 8 + length]
        offset += 12 + length
        if kind == b"IHDR":
            header = struct.unpack(">IIBBBBB", body)
        elif kind == b"IDAT":
            idat.append(body)
        elif kind == b"IEND":
            break
    width, height, depth, colour, _, _, interlace = header
    if depth != 8 or colour not in (2, 6) or interlace:
        raise ValueError(f"{path}: only 8-bit RGB or RGBA without interlacing is read (depth {depth}, colour type "
                         f"{colour}, interlace {interlace})")
    channels = 3 if colour == 2 else 4
    raw = zlib.decompress(b"".join(idat))
    stride = width * channels
    rows: List[List[Pixel]] = []
    previous = bytearray(stride)
    for number in range(height):
        start = number * (stride + 1)
        line = _unfilter(raw[start], bytearray(raw[start + 1:start + 1 + stride]), previous, channels)
        rows.append([tuple(line[x:x + 3]) for x in range(0, stride, channels)])
        previous = line
    return rows


def _unfilter(kind: int, line: bytearray, previous: bytearray, channels: int) -> bytearray:
    """One scanline with its filter undone (PNG's None, Sub, Up, Average and Paeth)."""
    for index in range(len(line)):
        left = line[index - channels] if index >= channels else 0
        up = previous[index]
        corner = previous[index - channels] if index >= channels else 0
        if kind == 1:
            line[index] = (line[index] + left) & 0xFF
        elif kind == 2:
            line[index] = (line[index] + up) & 0xFF
        elif kind == 3:
            line[index] = (line[index] + (left + up) // 2) & 0xFF
        elif kind == 4:
            line[index] = (line[index] + _paeth(left, up, corner)) & 0xFF
        elif kind != 0:
            raise ValueError(f"unknown PNG filter {kind}")
    return line


def _paeth(left: int, up: int, corner: int) -> int:
    estimate = left + up - corner
    distances = (abs(estimate - left), abs(estimate - up), abs(estimate - corner))
    return (left, up, corner)[distances.index(min(distances))]
