"""Reading a checkpoint's tensors from its safetensors headers: every field checked, every fault named by its file."""

import json
import struct

import pytest
import torch
from safetensors.torch import save_file

from optimum_ipu_ext import ModelFileError
from optimum_ipu_ext.placement.source import checkpoint
from optimum_ipu_ext.placement.source.checkpoint import (
    DTYPE_BITS,
    TensorHeader,
    parse_config,
    parse_header,
    read_folder,
    read_header,
    read_index,
)


def write_raw(path, header, data=b""):
    text = json.dumps(header).encode()
    path.write_bytes(struct.pack("<Q", len(text)) + text + data)
    return str(path)


def test_a_header_gives_each_tensor_its_dtype_and_shape_as_the_safetensors_library_writes_them(tmp_path):
    tensors = {"embeddings.weight": torch.zeros(10, 4, dtype=torch.float16), "position_ids": torch.arange(7),
               "attn.bias": torch.ones(1, 1, 3, 3, dtype=torch.bool), "attn.masked_bias": torch.tensor(-1e4),
               "layer.weight": torch.zeros(4, 4, dtype=torch.bfloat16), "head.bias": torch.zeros(2)}
    save_file(tensors, str(tmp_path / "model.safetensors"), metadata={"format": "pt"})
    assert read_header(str(tmp_path / "model.safetensors")) == {
        "embeddings.weight": TensorHeader("F16", (10, 4)), "position_ids": TensorHeader("I64", (7,)),
        "attn.bias": TensorHeader("BOOL", (1, 1, 3, 3)), "attn.masked_bias": TensorHeader("F32", ()),
        "layer.weight": TensorHeader("BF16", (4, 4)), "head.bias": TensorHeader("F32", (2,)),
    }
    assert read_folder(str(tmp_path)) == read_header(str(tmp_path / "model.safetensors"))


def test_elements_of_a_tensor():
    assert (TensorHeader("F32", (3, 4, 5)).elements, TensorHeader("F32", ()).elements,
            TensorHeader("F32", (0, 4)).elements) == (60, 1, 0)


@pytest.mark.parametrize("dtype, bits", [("BOOL", 8), ("U8", 8), ("I8", 8), ("F8_E5M2", 8), ("F8_E4M3", 8),
                                         ("F8_E8M0", 8), ("I16", 16), ("U16", 16), ("F16", 16), ("BF16", 16),
                                         ("I32", 32), ("U32", 32), ("F32", 32), ("F64", 64), ("I64", 64),
                                         ("U64", 64), ("F4", 4), ("F6_E2M3", 6), ("F6_E3M2", 6)])
def test_each_dtype_has_its_size(dtype, bits, tmp_path):
    assert DTYPE_BITS[dtype] == bits
    elements = 8  # a whole number of bytes for every size
    path = write_raw(tmp_path / "x.safetensors", {"t": {"dtype": dtype, "shape": [elements],
                                                        "data_offsets": [0, elements * bits // 8]}},
                     b"\0" * (elements * bits // 8))
    assert read_header(path) == {"t": TensorHeader(dtype, (elements,))}


def test_every_dtype_is_pinned():
    assert len(DTYPE_BITS) == 19


def test_a_sharded_checkpoint_is_read_through_its_index_in_the_index_order(tmp_path):
    save_file({"b": torch.zeros(2, 3)}, str(tmp_path / "model-00001-of-00002.safetensors"))
    save_file({"a": torch.zeros(5, dtype=torch.float16), "c": torch.zeros(1)},
              str(tmp_path / "model-00002-of-00002.safetensors"))
    (tmp_path / "model.safetensors.index.json").write_text(json.dumps({"metadata": {"total_size": 38}, "weight_map": {
        "c": "model-00002-of-00002.safetensors", "a": "model-00002-of-00002.safetensors",
        "b": "model-00001-of-00002.safetensors"}}))
    tensors = read_folder(str(tmp_path))
    assert tensors == {
        "c": TensorHeader("F32", (1,)), "a": TensorHeader("F16", (5,)), "b": TensorHeader("F32", (2, 3))
    }
    assert list(tensors) == ["c", "a", "b"]


def test_a_single_file_is_read_before_an_index(tmp_path):
    save_file({"w": torch.zeros(3)}, str(tmp_path / "model.safetensors"))
    (tmp_path / "model.safetensors.index.json").write_text("not read")
    assert read_folder(str(tmp_path)) == {"w": TensorHeader("F32", (3,))}


def test_a_folder_without_a_safetensors_checkpoint_has_none(tmp_path):
    (tmp_path / "pytorch_model.bin").write_bytes(b"weights")
    assert read_folder(str(tmp_path)) is None


def problem(path):
    with pytest.raises(ModelFileError) as raised:
        read_header(str(path))
    assert raised.value.path == str(path)
    assert str(raised.value) == f"Cannot read the model file '{path}': {raised.value.problem}."
    return raised.value.problem


@pytest.mark.parametrize("content, expected", [
    (b"", "truncated: 0 bytes, shorter than the 8-byte header length"),
    (b"\x10\0\0", "truncated: 3 bytes, shorter than the 8-byte header length"),
    (struct.pack("<Q", 100) + b'{"a": 1}', "truncated: the header says 100 bytes, the file holds 8 after it"),
    (struct.pack("<Q", 100_000_001), "a header of 100000001 bytes, more than the 100000000 allowed"),
    (b"\xff" * 8, "a header of 18446744073709551615 bytes, more than the 100000000 allowed"),  # unsigned
    (struct.pack("<Q", 4) + b"\xff\xfe{}", "the header is not JSON ('utf-8' codec can't decode byte 0xff"),
    (struct.pack("<Q", 3) + b"{a}", "the header is not JSON (Expecting property name enclosed in double quotes"),
    (struct.pack("<Q", 2) + b"[]", "the header is a JSON list, not an object"),
])
def test_a_truncated_or_malformed_header_is_named(tmp_path, content, expected):
    path = tmp_path / "model.safetensors"
    path.write_bytes(content)
    assert problem(path).startswith(expected)


def test_a_header_of_exactly_the_limit_is_read_up_to_it(tmp_path):
    path = tmp_path / "model.safetensors"
    path.write_bytes(struct.pack("<Q", 100_000_000) + b"{}")
    assert problem(path) == "truncated: the header says 100000000 bytes, the file holds 2 after it"


@pytest.mark.parametrize("entry, expected", [
    ([1], 'tensor "t": its entry is not an object'),
    ({"dtype": "F17", "shape": [1], "data_offsets": [0, 4]}, 'tensor "t": unknown dtype "F17"'),
    ({"shape": [1], "data_offsets": [0, 4]}, 'tensor "t": unknown dtype null'),
    ({"dtype": "F32", "shape": 4, "data_offsets": [0, 16]}, 'tensor "t": the shape 4 is not a list of sizes'),
    ({"dtype": "F32", "shape": [-1], "data_offsets": [0, 4]}, 'tensor "t": the shape [-1] is not a list of sizes'),
    ({"dtype": "F32", "shape": [True], "data_offsets": [0, 4]}, 'tensor "t": the shape [true] is not a list of sizes'),
    ({"dtype": "F32", "shape": [2], "data_offsets": [0, 4]},
     'tensor "t": data_offsets [0, 4] do not hold its 8 bytes within the 16 bytes of data'),
    ({"dtype": "F32", "shape": [4], "data_offsets": [8, 24]},
     'tensor "t": data_offsets [8, 24] do not hold its 16 bytes within the 16 bytes of data'),
    ({"dtype": "F32", "shape": [1], "data_offsets": [-4, 0]},
     'tensor "t": data_offsets [-4, 0] do not hold its 4 bytes within the 16 bytes of data'),
    ({"dtype": "F32", "shape": [1], "data_offsets": [0]},
     'tensor "t": data_offsets [0] do not hold its 4 bytes within the 16 bytes of data'),
    ({"dtype": "F32", "shape": [1], "data_offsets": [0, "4"]},
     'tensor "t": data_offsets [0, "4"] do not hold its 4 bytes within the 16 bytes of data'),
    ({"dtype": "F32", "shape": [1]},
     'tensor "t": data_offsets null do not hold its 4 bytes within the 16 bytes of data'),
])
def test_a_malformed_tensor_entry_is_named(tmp_path, entry, expected):
    path = write_raw(tmp_path / "model.safetensors", {"t": entry}, b"\0" * 16)
    assert problem(path) == expected


def test_offsets_at_the_end_of_the_data_are_within_it(tmp_path):
    path = write_raw(tmp_path / "m.safetensors", {"t": {"dtype": "F32", "shape": [2], "data_offsets": [8, 16]},
                                                  "__metadata__": {"format": "pt"}}, b"\0" * 16)
    assert read_header(path) == {"t": TensorHeader("F32", (2,))}


def test_a_tensor_may_have_no_elements(tmp_path):
    path = write_raw(tmp_path / "m.safetensors", {"t": {"dtype": "F32", "shape": [0, 4], "data_offsets": [0, 0]}})
    assert read_header(path) == {"t": TensorHeader("F32", (0, 4))}


def test_only_the_header_is_read_never_the_tensors(tmp_path, monkeypatch):
    header = {"t": {"dtype": "F32", "shape": [4], "data_offsets": [0, 16]}}
    path = write_raw(tmp_path / "m.safetensors", header, b"\0" * 16)
    reads = []

    def recording_open(*args, **kwargs):
        file = open(*args, **kwargs)
        read = file.read
        file.read = lambda size=-1: reads.append(size) or read(size)
        return file

    monkeypatch.setattr(checkpoint, "open", recording_open, raising=False)
    assert read_header(path) == {"t": TensorHeader("F32", (4,))}
    assert reads == [8, len(json.dumps(header))]


def test_a_header_read_with_the_data_after_it_is_read_up_to_its_length():
    # a range request for the first bytes of a file on the Hub takes some of its tensors' data too
    text = json.dumps({"t": {"dtype": "F32", "shape": [4], "data_offsets": [0, 16]}}).encode()
    data = struct.pack("<Q", len(text)) + text + b"\0" * 16
    assert parse_header(data, len(data), "m.safetensors") == {"t": TensorHeader("F32", (4,))}
    with pytest.raises(ModelFileError) as raised:
        parse_header(data[:5], 100, "remote/m.safetensors")
    assert str(raised.value) == ("Cannot read the model file 'remote/m.safetensors': truncated: 5 bytes, shorter than "
                                 "the 8-byte header length.")


def test_a_config_json_is_an_object_of_json_named_by_its_file():
    assert parse_config(b'{"model_type": "bert"}', "config.json") == {"model_type": "bert"}
    for data, problem in [(b"[1]", "expected a JSON object, found list"),
                          (b"{", "not valid JSON (Expecting property name enclosed in double quotes: line 1 column 2 "
                                 "(char 1))")]:
        with pytest.raises(ModelFileError) as raised:
            parse_config(data, "m/config.json")
        assert str(raised.value) == f"Cannot read the model file 'm/config.json': {problem}."


def test_an_index_that_cannot_be_read_is_named(tmp_path):
    with pytest.raises(ModelFileError) as raised:
        read_index(str(tmp_path / "model.safetensors.index.json"))
    assert str(raised.value) == (f"Cannot read the model file '{tmp_path / 'model.safetensors.index.json'}': "
                                 "No such file or directory.")


def test_a_missing_or_unreadable_file_is_named(tmp_path):
    assert problem(tmp_path / "absent.safetensors") == "No such file or directory"
    (tmp_path / "folder.safetensors").mkdir()
    assert problem(tmp_path / "folder.safetensors") == "Is a directory"


@pytest.mark.parametrize("index, expected", [
    ("{", "not valid JSON (Expecting property name enclosed in double quotes: line 1 column 2 (char 1))"),
    ("[]", 'expected {"weight_map": {tensor name: file name in this folder}}'),
    ('{"metadata": {}}', 'expected {"weight_map": {tensor name: file name in this folder}}'),
    ('{"weight_map": {"a": 3}}', 'expected {"weight_map": {tensor name: file name in this folder}}'),
    ('{"weight_map": {"a": ""}}', 'expected {"weight_map": {tensor name: file name in this folder}}'),
    ('{"weight_map": {"a": "../m.safetensors"}}', 'expected {"weight_map": {tensor name: file name in this folder}}'),
    ('{"weight_map": {"a": "m.safetensors", "b": "m.safetensors", "c": "m.safetensors", "d": "m.safetensors", '
     '"e": "m.safetensors"}}', "it names tensors its files do not hold: b, c, d and 1 more"),
    ('{"weight_map": {"a": "m.safetensors", "b": "m.safetensors"}}', "it names tensors its files do not hold: b"),
    ('{"weight_map": {"a": "m.safetensors", "b": "m.safetensors", "c": "m.safetensors", "d": "m.safetensors"}}',
     "it names tensors its files do not hold: b, c, d"),
])
def test_a_malformed_index_is_named(tmp_path, index, expected):
    save_file({"a": torch.zeros(1)}, str(tmp_path / "m.safetensors"))
    (tmp_path / "model.safetensors.index.json").write_text(index)
    with pytest.raises(ModelFileError) as raised:
        read_folder(str(tmp_path))
    assert (raised.value.path, raised.value.problem) == (str(tmp_path / "model.safetensors.index.json"), expected)


def test_a_shard_the_index_names_must_exist(tmp_path):
    (tmp_path / "model.safetensors.index.json").write_text('{"weight_map": {"a": "gone.safetensors"}}')
    with pytest.raises(ModelFileError) as raised:
        read_folder(str(tmp_path))
    gone = str(tmp_path / "gone.safetensors")
    assert (raised.value.path, raised.value.problem) == (gone, "No such file or directory")


def test_an_undecodable_index_is_named(tmp_path):
    (tmp_path / "model.safetensors.index.json").write_bytes(b"\xff\xfe")
    with pytest.raises(ModelFileError, match="not valid JSON"):
        read_folder(str(tmp_path))
