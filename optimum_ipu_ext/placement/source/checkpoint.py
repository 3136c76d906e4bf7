"""The tensors of a checkpoint, read from its safetensors headers alone: names, dtypes and shapes, never the weights.

A safetensors file starts with an 8-byte little-endian length N and N bytes of JSON: `{name: {"dtype", "shape",
"data_offsets"}}`, and an optional `"__metadata__"` object. A sharded checkpoint lists its files in
`model.safetensors.index.json` (`{"weight_map": {name: file}}`). Reading a header is a few kilobytes of a file of
gigabytes, and needs neither torch nor the `safetensors` package (whose readers import numpy or torch).

The `parse_*` functions check a file's bytes however they were read (from a folder, or by range requests from the
Hub: placement/hub_model.py), so that both sources are checked alike and name the file that is wrong.
"""

import json
import math
import os
import struct
from typing import Any, Callable, Dict, NamedTuple, Optional, Tuple

from ...errors import ModelFileError

SINGLE_FILE = "model.safetensors"
INDEX_FILE = "model.safetensors.index.json"

# The safetensors library refuses a header of more than 100 MB; so does this reader.
MAX_HEADER_BYTES = 100_000_000

# Bytes per element of each safetensors dtype (sub-byte float formats are packed, so are counted per bit).
DTYPE_BITS = {
    "BOOL": 8, "U8": 8, "I8": 8, "F8_E5M2": 8, "F8_E4M3": 8, "F8_E8M0": 8, "I16": 16, "U16": 16, "F16": 16,
    "BF16": 16, "I32": 32, "U32": 32, "F32": 32, "F64": 64, "I64": 64, "U64": 64, "F4": 4, "F6_E2M3": 6,
    "F6_E3M2": 6,
}


class TensorHeader(NamedTuple):
    """One tensor of a checkpoint, as its header describes it."""

    dtype: str
    shape: Tuple[int, ...]

    @property
    def elements(self) -> int:
        return math.prod(self.shape)


def read_header(path: str) -> Dict[str, TensorHeader]:
    """`{tensor name: TensorHeader}` of the safetensors file `path`, checked as the safetensors library checks it.

    Raises:
        ModelFileError: naming the file, when it cannot be read or its header is truncated or malformed.
    """
    try:
        with open(path, "rb") as reader:
            prefix = reader.read(8)
            data = prefix + reader.read(header_length(prefix, path))
            file_size = os.fstat(reader.fileno()).st_size
    except OSError as error:
        if isinstance(error, ModelFileError):
            raise
        raise ModelFileError(path, error.strerror or str(error)) from error
    return parse_header(data, file_size, path)


def header_length(prefix: bytes, name: str) -> int:
    """The length of the header that the first 8 bytes of the safetensors file `name` give, within the limit."""
    if len(prefix) < 8:
        raise ModelFileError(name, f"truncated: {len(prefix)} bytes, shorter than the 8-byte header length")
    (length,) = struct.unpack("<Q", prefix[:8])
    if length > MAX_HEADER_BYTES:
        raise ModelFileError(name, f"a header of {length} bytes, more than the {MAX_HEADER_BYTES} allowed")
    return length


def parse_header(data: bytes, file_size: int, name: str) -> Dict[str, TensorHeader]:
    """`{tensor name: TensorHeader}` of the safetensors file `name` of `file_size` bytes, from its first bytes `data`
    (its header length and as much of the header as the file holds), checked as the safetensors library checks it.

    Raises:
        ModelFileError: naming the file, when its header is truncated or malformed.
    """
    length = header_length(data, name)
    text = data[8:8 + length]
    if len(text) < length:
        raise ModelFileError(name, f"truncated: the header says {length} bytes, the file holds {len(text)} after it")
    try:
        entries = json.loads(text.decode("utf-8"))
    except (UnicodeDecodeError, ValueError) as error:
        raise ModelFileError(name, f"the header is not JSON ({error})") from error
    if not isinstance(entries, dict):
        raise ModelFileError(name, f"the header is a JSON {type(entries).__name__}, not an object")
    data_bytes = file_size - 8 - length
    return {
        tensor: _tensor(name, tensor, entry, data_bytes)
        for tensor, entry in entries.items() if tensor != "__metadata__"
    }


def _tensor(path: str, name: str, entry: object, data_bytes: int) -> TensorHeader:
    """The tensor `name` of the header of `path`, its entry checked: a known dtype, a shape of sizes, and data
    offsets that hold exactly its elements, within the file."""
    if not isinstance(entry, dict):
        raise ModelFileError(path, f"tensor {json.dumps(name)}: its entry is not an object")
    dtype, shape, offsets = entry.get("dtype"), entry.get("shape"), entry.get("data_offsets")
    if dtype not in DTYPE_BITS:
        raise ModelFileError(path, f"tensor {json.dumps(name)}: unknown dtype {json.dumps(dtype)}")
    if not isinstance(shape, list) or not all(isinstance(size, int) and not isinstance(size, bool) and size >= 0
                                              for size in shape):
        raise ModelFileError(path, f"tensor {json.dumps(name)}: the shape {json.dumps(shape)} is not a list of sizes")
    tensor = TensorHeader(dtype, tuple(shape))
    expected = math.ceil(tensor.elements * DTYPE_BITS[dtype] / 8)
    if (
        not isinstance(offsets, list) or len(offsets) != 2 or not all(isinstance(offset, int) for offset in offsets)
        or offsets[1] - offsets[0] != expected or offsets[0] < 0 or offsets[1] > data_bytes
    ):
        raise ModelFileError(
            path, f"tensor {json.dumps(name)}: data_offsets {json.dumps(offsets)} do not hold its {expected} bytes "
            f"within the {data_bytes} bytes of data"
        )
    return tensor


def read_folder(folder: str) -> Optional[Dict[str, TensorHeader]]:
    """The tensors of the safetensors checkpoint in `folder` (`model.safetensors`, else the files of
    `model.safetensors.index.json`), or `None` when it holds neither.

    Raises:
        ModelFileError: naming the file, when a header or the index cannot be read, or the index names a tensor its
            file does not hold.
    """
    single = os.path.join(folder, SINGLE_FILE)
    if os.path.isfile(single):
        return read_header(single)
    index = os.path.join(folder, INDEX_FILE)
    if not os.path.isfile(index):
        return None
    return sharded_tensors(read_index(index), index, lambda file: read_header(os.path.join(folder, file)))


def sharded_tensors(
    weight_map: Dict[str, str], index_name: str, read_shard: Callable[[str], Dict[str, TensorHeader]]
) -> Dict[str, TensorHeader]:
    """The tensors of a sharded checkpoint in the order of its index `index_name`, whose `weight_map` is given; each
    file's header read by `read_shard(file)`.

    Raises:
        ModelFileError: naming the index, when it names tensors its files do not hold.
    """
    tensors: Dict[str, TensorHeader] = {}
    for file in sorted(set(weight_map.values())):
        tensors.update(read_shard(file))
    missing = sorted(set(weight_map) - set(tensors))
    if missing:
        raise ModelFileError(index_name, f"it names tensors its files do not hold: {', '.join(missing[:3])}"
                             + (f" and {len(missing) - 3} more" if len(missing) > 3 else ""))
    return {name: tensors[name] for name in weight_map}


def read_index(path: str) -> Dict[str, str]:
    """The `weight_map` of a sharded checkpoint's index: `{tensor name: file}`, files in the index's folder."""
    try:
        with open(path, "rb") as reader:
            data = reader.read()
    except OSError as error:
        raise ModelFileError(path, error.strerror or str(error)) from error
    return parse_index(data, path)


def parse_index(data: bytes, name: str) -> Dict[str, str]:
    """The `weight_map` of the sharded checkpoint's index `name` whose content is `data`."""
    index = decode_json(data, name)
    weight_map = index.get("weight_map") if isinstance(index, dict) else None
    if not isinstance(weight_map, dict) or not all(
        isinstance(file, str) and file and os.path.basename(file) == file for file in weight_map.values()
    ):
        raise ModelFileError(name, 'expected {"weight_map": {tensor name: file name in this folder}}')
    return weight_map


def parse_config(data: bytes, name: str) -> Dict[str, Any]:
    """The model's `config.json` (the file `name`, whose content is `data`): a JSON object."""
    config = decode_json(data, name)
    if not isinstance(config, dict):
        raise ModelFileError(name, f"expected a JSON object, found {type(config).__name__}")
    return config


def decode_json(data: bytes, name: str) -> Any:
    """The JSON value of the model file `name`, whose content is `data` (UTF-8)."""
    try:
        return json.loads(data.decode("utf-8"))
    except (UnicodeDecodeError, ValueError) as error:
        raise ModelFileError(name, f"not valid JSON ({error})") from error
