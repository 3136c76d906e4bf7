"""Configs of earlier optimum-graphcore releases: each format change (migration.py), the corpus of published
configs (tests/data/published_configs), the warnings, `save_pretrained` and `ipu-config upgrade`."""

import contextlib
import json
import warnings
from pathlib import Path

import pytest

from optimum_ipu_ext import (
    ConfigFileError,
    ConfigMigrationWarning,
    IncompatibleSettingsError,
    InvalidSettingError,
    IPUConfig,
    PlainIPUConfig,
    SettingTypeError,
    UnknownSettingError,
)
from optimum_ipu_ext.settings.migration import FORMAT_CHANGES, POD_TYPES, Migration, migrate
from support.cli_helpers import run
from support.corpus import INDEX, PUBLISHED_CONFIGS as DATA
from support.doubles import state
from support.markers import NOT_UNDER_MUTMUT

PER_POD = {"pod4": 1, "pod16": 4, "default": 2}
MOMENTUM = ("deprecated in optimum-graphcore 0.4.0; the trainer accumulates momentum in float16 unless the `--fp32` "
            "training argument is given.")

# {corpus file: the keys it migrates, in order}; a file absent here is refused (REFUSED)
PODS, ZERO, ONE, HALF = ("replication_factor inference_replication_factor", "embedding_serialization_factor",
                         "matmul_proportion", "enable_half_first_order_momentum")
MIGRATED_KEYS = {
    "hub__Graphcore__t5-small-ipu@7e8abbc8.json": f"{PODS} {HALF}",
    "hub__Graphcore__wav2vec2-ctc-base-ipu@b0b565b4.json": f"{PODS} {ZERO} {HALF}",
    "hub__Graphcore__hubert-base-ipu@1f874ab3.json": f"{PODS} {HALF}",
    "hub__Graphcore__wav2vec2-large-ipu@ccf13224.json": f"{PODS} {ZERO} {HALF}",
    "hub__Graphcore__gpt2-medium-ipu@4063b4ba.json": f"{ZERO} {HALF}",
    "hub__Graphcore__roberta-large-ipu@007eb787.json": HALF,
    "hub__Graphcore__wav2vec2-base-ipu@774002bd.json": HALF,
    "hub__Graphcore__roberta-base-squad2@c804a1c2.json": "profile_dir",
    "hub__Graphcore__hubert-base-ipu@main.json": "",
    "hub__Graphcore__vit-base-ipu@main.json": "",
    "hub__Graphcore__mt5-small-ipu@main.json": "",
    "hub__Graphcore__bert-large-ipu@main.json": "",
    "hub__Graphcore__wav2vec2-base-ipu@main.json": "",
    "hub__Graphcore__whisper-small-ipu@main.json": "",
    "optimum-graphcore__language-modeling@c68fb894.json": f"{ONE} async_dataloader {HALF}",
    "optimum-graphcore__question-answering@7c13b3ff.json": f"{ONE} async_dataloader {HALF} random_seed",
    "optimum-graphcore__multiple-choice@5b771905.json": f"{ONE} async_dataloader {HALF}",
    "optimum-graphcore__multiple-choice@69f1d02d.json": f"{ONE} async_dataloader {HALF}",
    "optimum-graphcore__question-answering_roberta-large@fcec7f88.json": f"async_dataloader {HALF}",
    "optimum-graphcore__language-modeling@92316f39.json": f"{ONE} {HALF}",
    "optimum-graphcore__text-classification_xnli_ipu_config@92316f39.json": f"{ONE} {HALF}",
    "optimum-graphcore__translation@a68820c3.json": f"{ZERO} {ONE} {HALF}",
    "optimum-graphcore__translation@83d64e25.json": f"{ZERO} {ONE} {HALF}",
    "optimum-graphcore__summarization@46596a9b.json": HALF,
    "optimum-graphcore__translation@46596a9b.json": f"{ZERO} {ONE} {HALF}",
    "optimum-graphcore__summarization@c25614dc.json": HALF,
    "optimum-graphcore__summarization@e0951130.json": HALF,
    **{f"optimum-graphcore__audio-classification_hubert-base@{commit}.json": f"{PODS} {HALF}"
       for commit in ("2ecf7027", "e812aaff", "7ff97762", "d3388eb5")},
    **{f"optimum-graphcore__speech-{name}-ipu_config@{commit}.json": f"{ZERO} {HALF}"
       for name, commit in (("pretraining_base_4", "da3cbf3f"), ("pretraining_large_8", "57bc3963"),
                            ("recognition_base_4", "4242bef3"), ("pretraining_base_4", "ba3f822c"),
                            ("pretraining_large_8", "ba3f822c"), ("recognition_base_4", "ba3f822c"),
                            ("recognition_large_8", "3ff2e1e9"), ("pretraining_base_4", "21817077"))},
    "optimum-graphcore__language-modeling@87e9273f.json": f"{ONE} {HALF}",
    "optimum-graphcore__t5Encoder@a5727597.json": HALF,
}
# {corpus file: (error, its message with {path} for the file)}: what no release's IPUConfig read, as refused today
REFUSED = {
    "optimum-graphcore__question-answering@533df658.json": (
        ConfigFileError, "Cannot load the IPU config file '{path}': the key \"replicated_tensor_sharding\" is given "
                         "twice in one object; give each key once."),
    "optimum-graphcore__text-classification_xlni_ipu_config@ceb550b6.json": (
        ConfigFileError, "Cannot load the IPU config file '{path}': not valid JSON (Expecting property name enclosed "
                         "in double quotes: line 19 column 1 (char 531))."),
    "optimum-graphcore__image-classification@aa998ad7.json": (
        UnknownSettingError, "Unknown IPU config key `fp32`. (loading '{path}')"),
    "optimum-graphcore__tests_generation_ipu_config_tiny_random@a30785ac.json": (
        IncompatibleSettingsError, "`layers_per_ipu=[0, 2, 2]` is invalid: it needs one entry per IPU, as "
                                   "`ipus_per_replica=4`. (loading '{path}')"),
}
LOADED = sorted(MIGRATED_KEYS)


def write(tmp_path, values, name="ipu_config.json") -> Path:
    path = tmp_path / name
    path.write_text(json.dumps(values))
    return path


def messages(caught):
    return [str(warning.message) for warning in caught]


# The corpus and its index

def test_the_index_lists_every_corpus_file_once_with_its_source():
    assert sorted(entry["file"] for entry in INDEX) == sorted(path.name for path in DATA.glob("*@*.json"))
    assert sorted({**MIGRATED_KEYS, **REFUSED}) == sorted(entry["file"] for entry in INDEX)
    assert sorted(REFUSED) == sorted(entry["file"] for entry in INDEX if "not_placed" in entry["model"])
    for entry in INDEX:
        assert entry["url"].startswith(("https://huggingface.co/Graphcore/",
                                        "https://github.com/huggingface/optimum-graphcore/"))
        assert entry["revision"] in entry["url"] and entry["written_for"] and entry["copy"]


def test_the_corpus_has_every_format_of_the_issue():
    raws = [json.loads((DATA / name).read_text()) for name in LOADED]
    per_pod_type = [raw["replication_factor"] for raw in raws if isinstance(raw.get("replication_factor"), dict)]
    assert any("pod128" in value for value in per_pod_type) and any("pod8" in value for value in per_pod_type)
    assert any(raw.get("embedding_serialization_factor") == 0 for raw in raws)
    assert any(raw.get("matmul_proportion") == [0.25] and raw.get("ipus_per_replica") == 4 for raw in raws)
    assert any(raw.get("serialized_embedding_splits_per_ipu") == [4, 4, 0, 0] for raw in raws)
    assert {"async_dataloader", "profile_dir", "random_seed", "enable_half_first_order_momentum"} <= {
        key for raw in raws for key in raw}


@pytest.mark.parametrize("name", LOADED)
def test_every_published_config_loads_with_a_warning_per_migrated_key(name):
    path = DATA / name
    expected = MIGRATED_KEYS[name].split()
    with pytest.warns(ConfigMigrationWarning) if expected else _no_warning() as caught:
        plain = PlainIPUConfig.from_json_file(path)
    assert len(caught or ()) == len(expected)
    assert [migration.key for migration in migrate(json.loads(path.read_text())).migrations] == expected
    with pytest.warns(ConfigMigrationWarning) if expected else _no_warning():
        config = IPUConfig.from_pretrained(str(path))
    assert plain.settings_dict() == config.settings_dict()


@pytest.mark.parametrize("for_inference", [False, True], ids=["training", "inference"])
@pytest.mark.parametrize("name", LOADED)
def test_every_published_config_builds_as_optimum_graphcore_builds_it_migrated(sdk, upstream, name, for_inference):
    path = DATA / name
    migrated = migrate(json.loads(path.read_text())).config
    theirs = state(upstream.IPUConfig(**migrated).to_options(for_inference=for_inference))
    with pytest.warns(ConfigMigrationWarning) if MIGRATED_KEYS[name] else _no_warning():
        ours = state(IPUConfig.from_pretrained(str(path)).to_options(for_inference=for_inference))
    for built in (theirs, ours):
        built.pop("saveInitializersToFile", None)  # a temporary file drawn afresh by each build
    assert ours == theirs


@pytest.mark.parametrize("name", sorted(REFUSED))
def test_what_no_release_read_is_refused_naming_the_file(name):
    error, message = REFUSED[name]
    path = DATA / name
    with pytest.raises(error) as raised, _any_warnings():
        PlainIPUConfig.from_json_file(str(path))
    assert str(raised.value) == message.format(path=path)


@contextlib.contextmanager
def _no_warning():
    """Fails on any warning raised in the block (`pytest.warns` for none)."""
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        yield None
    assert messages(caught) == []


@contextlib.contextmanager
def _any_warnings():
    """Lets the migrations a refused file warns about before its error pass."""
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", ConfigMigrationWarning)
        yield


# Each rule

def test_a_per_pod_type_value_takes_the_pod_types_value_else_its_default():
    raw = {"replication_factor": PER_POD, "inference_replication_factor": {"pod16": 8, "default": 1}}
    assert migrate(raw, "a.json", "pod16") == (
        {"replication_factor": 4, "inference_replication_factor": 8},
        [Migration("replication_factor", "`replication_factor` in a.json is a value per pod type, which "
                   "optimum-graphcore 0.7.0 no longer reads: it becomes `replication_factor=4`, its value for pod16."),
         Migration("inference_replication_factor", "`inference_replication_factor` in a.json is a value per pod type, "
                   "which optimum-graphcore 0.7.0 no longer reads: it becomes `inference_replication_factor=8`, its "
                   "value for pod16.")])
    assert migrate(raw, "a.json", "pod4").migrations[1].message == (
        "`inference_replication_factor` in a.json is a value per pod type, which optimum-graphcore 0.7.0 no longer "
        'reads: it becomes `inference_replication_factor=1`, its "default" (it has no value for pod4).')
    assert migrate(raw).migrations[0].message == (
        "`replication_factor` is a value per pod type, which optimum-graphcore 0.7.0 no longer reads: it becomes "
        '`replication_factor=2`, its "default".')
    assert raw["replication_factor"] == PER_POD  # the file's dictionary is left as it was


def test_a_per_pod_type_value_without_the_pod_type_nor_a_default_is_refused_listing_its_pod_types():
    raw = {"replication_factor": {"pod64": 16, "pod4": 1}}
    with pytest.raises(InvalidSettingError) as raised:
        migrate(raw, pod_type="pod16")
    assert str(raised.value) == ('`replication_factor={"pod64": 16, "pod4": 1}` is invalid: it has no value for pod16 '
                                 'and no "default"; the pod types it has are pod4, pod64.')
    with pytest.raises(InvalidSettingError) as raised:
        migrate(raw)
    assert str(raised.value) == ('`replication_factor={"pod64": 16, "pod4": 1}` is invalid: it gives a value per pod '
                                 'type and no "default": choose one of pod4, pod64 with `pod_type=` (`--pod-type` on '
                                 'the command line).')


def test_a_pod_type_is_one_a_release_took():
    assert POD_TYPES == ("pod4", "pod8", "pod16", "pod32", "pod64", "pod128", "pod256")
    assert migrate({"replication_factor": {"pod256": 64}}, pod_type="pod256").config == {"replication_factor": 64}
    every_pod_type = {"pod4": 1, "pod8": 2, "pod16": 4, "pod32": 8, "pod64": 16, "pod128": 32, "pod256": 64,
                      "default": 1}
    assert migrate({"replication_factor": every_pod_type}, pod_type="pod32").config == {"replication_factor": 8}
    with pytest.raises(InvalidSettingError) as raised:
        migrate({}, pod_type="pod2")
    assert str(raised.value) == ('`pod_type="pod2"` is invalid: the pod types are pod4, pod8, pod16, pod32, pod64, '
                                 'pod128, pod256.')


@pytest.mark.parametrize("value", [{"pod4": 1, "enableStableNorm": True}, {}, {"Default": 1}])
def test_an_object_with_another_key_is_no_per_pod_type_value(value):
    assert migrate({"popart_options": value}) == ({"popart_options": value}, [])


def test_a_serialization_factor_of_0_is_not_serialised():
    assert migrate({"embedding_serialization_factor": 0}, "a.json") == (
        {"embedding_serialization_factor": 1},
        [Migration("embedding_serialization_factor", "`embedding_serialization_factor` in a.json is 0, which "
                   "optimum-graphcore 0.6.1 no longer reads: it becomes `embedding_serialization_factor=1`, not "
                   "serialised, as 0 meant.")])
    for kept in ({"embedding_serialization_factor": 1}, {"inference_embedding_serialization_factor": 0},
                 {"embedding_serialization_factor": None}):
        assert migrate(kept) == (kept, [])


def test_the_string_null_is_null_where_a_setting_takes_no_string():
    assert migrate({"embedding_serialization_factor": "null"}, "a.json") == (
        {"embedding_serialization_factor": None},
        [Migration("embedding_serialization_factor", '`embedding_serialization_factor` in a.json is the string '
                   '"null", which optimum-graphcore 0.6.1 no longer reads: it becomes '
                   "`embedding_serialization_factor=null`.")])
    for kept in ({"executable_cache_dir": "null"}, {"not_a_setting": "null"}, {"seed": "none"}):
        assert migrate(kept) == (kept, [])
    with pytest.raises(SettingTypeError):  # a key of an earlier release is checked as its setting was
        migrate({"random_seed": "null"})


@pytest.mark.parametrize("given, ipus", [({"ipus_per_replica": 4}, 4), ({"layers_per_ipu": [1, 2, 3]}, 3),
                                         ({"ipus_per_replica": 2, "layers_per_ipu": [1, 2, 3]}, 2)])
def test_a_one_entry_proportion_with_several_ipus_is_that_proportion_on_every_ipu(given, ipus):
    assert migrate({**given, "matmul_proportion": [0.3]}, "a.json") == (
        {**given, "matmul_proportion": 0.3},
        [Migration("matmul_proportion", f"`matmul_proportion` in a.json has one proportion for {ipus} IPUs, which "
                   "optimum-graphcore 0.6.1 no longer reads: it becomes `matmul_proportion=0.3`, that proportion on "
                   "every IPU, as earlier releases read it.")])


@pytest.mark.parametrize("kept", [{"matmul_proportion": [0.3]}, {"ipus_per_replica": 1, "matmul_proportion": [0.3]},
                                  {"layers_per_ipu": [4], "matmul_proportion": [0.3]},
                                  {"ipus_per_replica": 2, "matmul_proportion": [0.3, 0.2]},
                                  {"ipus_per_replica": 2, "inference_matmul_proportion": [0.3]}])
def test_a_proportion_0_7_1_reads_stays(kept):
    assert migrate(kept) == (kept, [])


def test_async_dataloader_is_dropped_naming_what_chooses_it_now():
    assert migrate({"async_dataloader": True}, "a.json") == ({}, [Migration(
        "async_dataloader", "`async_dataloader` in a.json is no longer an IPUConfig setting and is ignored: never "
        "read by IPUConfig: it came in the example configs of optimum-graphcore 0.1.0 and 0.2.0, which the trainer "
        'saved back; the `dataloader_mode="async"` training argument chooses an asynchronous data loader.')])


def test_every_rule_together_in_file_order_then_the_legacy_keys():
    raw = {"random_seed": 5, "matmul_proportion": [0.1], "replication_factor": {"pod16": 4, "default": 1},
           "embedding_serialization_factor": 0, "ipus_per_replica": 2}
    migrated = migrate(raw, pod_type="pod16")
    assert migrated.config == {"matmul_proportion": 0.1, "replication_factor": 4, "embedding_serialization_factor": 1,
                               "ipus_per_replica": 2, "seed": 5}
    assert [migration.key for migration in migrated.migrations] == [
        "replication_factor", "embedding_serialization_factor", "matmul_proportion", "random_seed"]


def test_a_key_no_release_had_stays_an_error_without_a_migration(tmp_path):
    with pytest.raises(UnknownSettingError) as raised, warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        PlainIPUConfig.from_json_file(write(tmp_path, {"replication_factr": {"pod4": 1, "default": 1}}))
    assert str(raised.value).startswith(
        "Unknown IPU config key `replication_factr`. Did you mean `replication_factor`?")
    assert messages(caught) == []
    assert migrate({"transformers_version": "null", "seed": {"default": 1}}).migrations[0].key == "seed"


def test_the_table_of_format_changes_names_each_release():
    assert [(change.written, change.becomes, change.release) for change in FORMAT_CHANGES] == [
        ('a value per pod type (`{"pod4": 1, "pod16": 4, "default": 1}`)',
         'the value for the pod type given, else its "default"', "0.7.0"),
        ("`embedding_serialization_factor: 0`", "`1`: not serialised", "0.6.1"),
        ('the string `"null"` for a setting that takes no string', "`null`", "0.6.1"),
        ("a one-entry `matmul_proportion` list with several IPUs", "that proportion on every IPU", "0.6.1"),
    ]


# Loading: warnings at the caller's line, pod_type, save_pretrained

@NOT_UNDER_MUTMUT
@pytest.mark.parametrize("load", ["from_pretrained", "plain"])
def test_the_warnings_point_at_the_callers_line_and_are_future_warnings(tmp_path, load):
    path = write(tmp_path, {"replication_factor": PER_POD, "decompose_grad_sum": True})
    with pytest.warns(FutureWarning) as caught:
        if load == "plain":
            config = PlainIPUConfig.from_json_file(path, pod_type="pod4")
        else:
            config = IPUConfig.from_pretrained(str(path), pod_type="pod4")
    assert [(warning.category, warning.filename) for warning in caught] == [(ConfigMigrationWarning, __file__)] * 2
    assert config.replication_factor == 1 and config.popart_options == {"decomposeGradSum": True}


@NOT_UNDER_MUTMUT
def test_a_legacy_key_given_to_the_constructor_warns_at_the_callers_line(tmp_path):
    with pytest.warns(ConfigMigrationWarning) as caught:
        IPUConfig(random_seed=3)
        IPUConfig.from_json_file(write(tmp_path, {"random_seed": 4}))  # transformers' loader calls the constructor
    assert [warning.filename for warning in caught] == [__file__] * 2


def test_a_refused_pod_type_names_the_file(tmp_path):
    path = write(tmp_path, {"replication_factor": {"pod4": 1}})
    with pytest.raises(InvalidSettingError) as raised:
        IPUConfig.from_pretrained(str(path), pod_type="pod8")
    assert str(raised.value) == ('`replication_factor={"pod4": 1}` is invalid: it has no value for pod8 and no '
                                 f"\"default\"; the pod types it has are pod4. (loading '{path}')")


def test_a_migrated_config_saves_its_migrated_form_which_loads_without_a_warning(tmp_path):
    old = DATA / "hub__Graphcore__wav2vec2-large-ipu@ccf13224.json"
    with pytest.warns(ConfigMigrationWarning):
        config = IPUConfig.from_pretrained(str(old), pod_type="pod16")
    config.save_pretrained(tmp_path / "new")
    saved = json.loads((tmp_path / "new" / "ipu_config.json").read_text())
    assert (saved["replication_factor"], saved["inference_replication_factor"]) == (2, 2)
    assert saved["embedding_serialization_factor"] == 1 and "enable_half_first_order_momentum" not in saved
    with _no_warning():
        assert IPUConfig.from_pretrained(str(tmp_path / "new")).to_dict() == config.to_dict()


# The command line

def test_validate_reports_migrations_as_warnings_not_errors(capsys):
    path = DATA / "hub__Graphcore__t5-small-ipu@7e8abbc8.json"
    code, out, err = run(capsys, "validate", path, "--pod-type", "pod64")
    assert (code, out) == (0, "")
    assert err.splitlines() == [
        f"ipu-config: warning: {path}: `replication_factor` is a value per pod type, which optimum-graphcore 0.7.0 no "
        "longer reads: it becomes `replication_factor=16`, its value for pod64.",
        f"ipu-config: warning: {path}: `inference_replication_factor` is a value per pod type, which "
        "optimum-graphcore 0.7.0 no longer reads: it becomes `inference_replication_factor=16`, its value for pod64.",
        f"ipu-config: warning: {path}: `enable_half_first_order_momentum` is no longer an IPUConfig setting and is "
        f"ignored: {MOMENTUM}",
        "1 IPU config(s) valid",
    ]


def test_validate_reports_a_refused_pod_type_as_a_problem(capsys):
    path = DATA / "hub__Graphcore__t5-small-ipu@7e8abbc8.json"
    code, out, _ = run(capsys, "validate", path, "--pod-type", "pod3")
    assert (code, out) == (1, f'{path}: `pod_type="pod3"` is invalid: the pod types are pod4, pod8, pod16, pod32, '
                              "pod64, pod128, pod256.\n")


def test_show_takes_the_pod_type(capsys):
    code, out, err = run(capsys, "show", DATA / "hub__Graphcore__hubert-base-ipu@1f874ab3.json", "--pod-type", "pod32",
                         "--json")
    assert code == 0 and json.loads(out)["replication"]["replication_factor"] == 8
    assert "its value for pod32" in err


def test_upgrade_rewrites_the_file_keeping_a_backup_and_says_what_changed(capsys, tmp_path):
    original = (DATA / "hub__Graphcore__gpt2-medium-ipu@4063b4ba.json").read_text()
    path = tmp_path / "ipu_config.json"
    path.write_text(original)
    code, out, err = run(capsys, "upgrade", tmp_path)
    assert (code, err) == (0, "")
    assert out.splitlines() == [
        f"Upgraded {path} (the original is kept as {path}.bak):",
        "  `embedding_serialization_factor` is 0, which optimum-graphcore 0.6.1 no longer reads: it becomes "
        "`embedding_serialization_factor=1`, not serialised, as 0 meant.",
        f"  `enable_half_first_order_momentum` is no longer an IPUConfig setting and is ignored: {MOMENTUM}",
    ]
    assert (tmp_path / "ipu_config.json.bak").read_text() == original
    assert json.loads(path.read_text()) == {
        "embedding_serialization_factor": 1, "recompute_checkpoint_every_layer": True, "optimizer_state_offchip": True,
        "replicated_tensor_sharding": True, "enable_half_partials": True, "device_iterations": 2,
        "inference_device_iterations": 4, "replication_factor": 4, "inference_replication_factor": 4,
        "gradient_accumulation_steps": 16, "executable_cache_dir": "./exe_cache", "ipus_per_replica": 4,
        "layers_per_ipu": [3, 7, 7, 7], "matmul_proportion": [0.15, 0.12, 0.15, 0.2]}
    text = path.read_text()
    code, out, _ = run(capsys, "upgrade", path)  # a second run finds nothing to do and writes nothing
    assert (code, out) == (0, f"{path}: already in optimum-graphcore 0.7.1's terms; left as it is\n")
    assert path.read_text() == text and (tmp_path / "ipu_config.json.bak").read_text() == original


def test_upgrade_without_backup_keeps_none(capsys, tmp_path):
    path = write(tmp_path, {"replication_factor": PER_POD})
    code, out, _ = run(capsys, "upgrade", path, "--no-backup", "--pod-type", "pod16")
    assert code == 0 and out.splitlines()[0] == f"Upgraded {path}:"
    assert json.loads(path.read_text()) == {"replication_factor": 4}
    assert sorted(child.name for child in tmp_path.iterdir()) == ["ipu_config.json"]


def test_upgrade_refuses_to_overwrite_a_backup(capsys, tmp_path):
    path = write(tmp_path, {"embedding_serialization_factor": 0})
    (tmp_path / "ipu_config.json.bak").write_text("earlier")
    code, out, err = run(capsys, "upgrade", path)
    assert (code, out) == (1, "")
    assert err == (f"ipu-config: error: {path}.bak: exists; move it away or pass --no-backup. {path} is left as it "
                   "is.\n")
    assert json.loads(path.read_text()) == {"embedding_serialization_factor": 0}
    assert (tmp_path / "ipu_config.json.bak").read_text() == "earlier"


def test_upgrade_leaves_a_file_it_cannot_read_or_upgrade_untouched_and_goes_on(capsys, tmp_path):
    broken = tmp_path / "broken.json"
    broken.write_text('{"seed": 1,}')
    unknown = write(tmp_path, {"replication_factor": {"pod4": 1}}, "pods.json")
    good = write(tmp_path, {"embedding_serialization_factor": 0}, "good.json")
    code, out, err = run(capsys, "upgrade", broken, unknown, good)
    assert code == 1
    assert err.splitlines() == [
        f"ipu-config: error: Cannot load the IPU config file '{broken}': not valid JSON (Expecting property name "
        "enclosed in double quotes: line 1 column 12 (char 11)).",
        f'ipu-config: error: {unknown}: `replication_factor={{"pod4": 1}}` is invalid: it gives a value per pod type '
        'and no "default": choose one of pod4 with `pod_type=` (`--pod-type` on the command line). The file is left '
        "as it is.",
    ]
    assert out.startswith(f"Upgraded {good}")
    assert broken.read_text() == '{"seed": 1,}'
    assert json.loads(unknown.read_text()) == {"replication_factor": {"pod4": 1}}
    assert sorted(child.name for child in tmp_path.iterdir()) == ["broken.json", "good.json", "good.json.bak",
                                                                  "pods.json"]


def test_diff_and_export_take_the_pod_type(capsys, tmp_path):
    old = write(tmp_path, {"replication_factor": PER_POD}, "old.json")
    new = write(tmp_path, {"replication_factor": 4}, "new.json")
    assert run(capsys, "diff", old, new, "--exit-code", "--pod-type", "pod16")[0] == 0
    assert run(capsys, "diff", old, new, "--exit-code")[0] == 1  # its "default", 2
    code, _, _ = run(capsys, "export", old, "-o", tmp_path / "run.cfg", "--pod-type", "pod16")
    assert code == 0 and "replicationFactor(4)" in (tmp_path / "run.cfg").read_text().splitlines()


@pytest.fixture
def old_hub_config(hub_client, tmp_path, monkeypatch):
    """A Hub repository holding a config of optimum-graphcore 0.3-0.6, with the client run from an empty directory."""
    monkeypatch.chdir(tmp_path)
    hub_client.create_repo("org/old-ipu")
    text = (DATA / "hub__Graphcore__t5-small-ipu@7e8abbc8.json").read_text()
    hub_client.commit("org/old-ipu", {"ipu_config.json": text}, message="Add config")
    return hub_client


@pytest.mark.filterwarnings("ignore::FutureWarning:huggingface_hub")  # the peer, transformers 4.x, causes it
def test_pull_writes_the_migrated_config_of_the_pod_type(capsys, old_hub_config, tmp_path):
    code, out, err = run(capsys, "pull", "org/old-ipu", tmp_path / "out", "--pod-type", "pod32")
    assert code == 0, err
    assert "`replication_factor=8`, its value for pod32" in err
    saved = json.loads((tmp_path / "out" / "ipu_config.json").read_text())
    assert (saved["replication_factor"], saved["inference_replication_factor"]) == (8, 8)
    with _no_warning():
        assert IPUConfig.from_pretrained(str(tmp_path / "out")).replication_factor == 8


@NOT_UNDER_MUTMUT
@pytest.mark.filterwarnings("ignore::FutureWarning:huggingface_hub")
def test_from_pretrained_migrates_a_hub_config_naming_the_repository(old_hub_config):
    with pytest.warns(ConfigMigrationWarning) as caught:
        config = IPUConfig.from_pretrained("org/old-ipu", pod_type="pod8")
    assert config.replication_factor == 2
    assert [warning.filename for warning in caught] == [__file__] * 3
    assert str(caught[0].message) == (
        "`replication_factor` in 'ipu_config.json' of Hub repository 'org/old-ipu' at revision 'main' is a value per "
        "pod type, which optimum-graphcore 0.7.0 no longer reads: it becomes `replication_factor=2`, its value for "
        "pod8.")


@pytest.mark.filterwarnings("ignore::FutureWarning:huggingface_hub")
def test_validate_warns_once_per_migration_of_a_hub_config(capsys, old_hub_config):
    code, out, err = run(capsys, "validate", "org/old-ipu", "--pod-type", "pod16")
    assert (code, out) == (0, "")
    assert err.splitlines() == [
        "ipu-config: warning: org/old-ipu: `replication_factor` is a value per pod type, which optimum-graphcore "
        "0.7.0 no longer reads: it becomes `replication_factor=4`, its value for pod16.",
        "ipu-config: warning: org/old-ipu: `inference_replication_factor` is a value per pod type, which "
        "optimum-graphcore 0.7.0 no longer reads: it becomes `inference_replication_factor=4`, its value for pod16.",
        "ipu-config: warning: org/old-ipu: `enable_half_first_order_momentum` is no longer an IPUConfig setting and "
        f"is ignored: {MOMENTUM}",
        "1 IPU config(s) valid",
    ]
