"""The placement on the model card: `push_to_hub(..., model=...)` and `ipu-config push --model` commit the picture
of the placement (`ipu_config_placement.svg`) beside the card and show it, with its table, in the card's section;
the user's card is kept; a push without a model deletes the picture; a placement that fails or an option without a
model uploads nothing. The hub layer takes the picture and the Markdown as data (`CardAttachment`)."""

import json

import pytest
from huggingface_hub import ModelCard

from optimum_ipu_ext import IPUConfig, PlacementError
from optimum_ipu_ext.config.configuration import placement_attachment
from optimum_ipu_ext.hub.card import PICTURE_NAME, SECTION_END, SECTION_START, CardAttachment, card_text
from optimum_ipu_ext.hub.push import push_config
from optimum_ipu_ext.placement.report.card import card_markdown
from optimum_ipu_ext.placement.report.placement_picture import placement_svg
from optimum_ipu_ext.placement.report.tables import placement_table
from optimum_ipu_ext.placement.report.view import placement_view
from support.cli_helpers import run
from support.placement_fixtures import bert_base

CONFIG = {"layers_per_ipu": [6, 6], "gradient_accumulation_steps": 16}
USER_CARD = "---\nlicense: apache-2.0\n---\n\n# bert-ipu\n\nFine-tuned on SQuAD: **F1 88.5**.\n"


@pytest.fixture
def hub(hub_client, tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    return hub_client


@pytest.fixture
def bert(tmp_path):
    return bert_base(tmp_path / "bert-base")


def section(card):
    return card[card.index(SECTION_START): card.index(SECTION_END)]


def test_the_card_holds_the_attachment_s_markdown_in_its_section_before_use_it():
    text = card_text(IPUConfig(**CONFIG), "org/cfg", USER_CARD, extra="### Placement\n\n![picture](p.svg)\n")
    body = section(text)
    assert body.index("### Settings that differ") < body.index("### Placement\n\n![picture](p.svg)\n\n### Use it")
    assert text[:text.index(SECTION_START)].endswith("# bert-ipu\n\nFine-tuned on SQuAD: **F1 88.5**.\n\n")
    assert "### Placement" not in section(card_text(IPUConfig(**CONFIG), "org/cfg", USER_CARD))


def test_a_push_commits_the_attachment_s_files_with_the_card_and_a_push_without_deletes_the_picture(hub):
    hub.create_repo("org/bert-ipu")
    hub.commit("org/bert-ipu", {"README.md": USER_CARD, "notes.svg": b"<svg/>"})
    markdown = f"### Placement\n\n![the placement]({PICTURE_NAME})\n"
    attachment = CardAttachment(markdown, {PICTURE_NAME: b"<svg>1</svg>"})
    push_config(IPUConfig(**CONFIG), "org/bert-ipu", {"token": hub.write_token}, attachment)
    files = hub.files("org/bert-ipu")
    assert files[PICTURE_NAME] == b"<svg>1</svg>" and files["notes.svg"] == b"<svg/>"
    card = files["README.md"].decode()
    assert f"![the placement]({PICTURE_NAME})" in section(card)
    assert card[:card.index(SECTION_START)].endswith("# bert-ipu\n\nFine-tuned on SQuAD: **F1 88.5**.\n\n")
    assert len(hub.commit_messages("org/bert-ipu")) == 3  # one commit: config, card and picture together
    push_config(IPUConfig(**CONFIG), "org/bert-ipu", {"token": hub.write_token})
    files = hub.files("org/bert-ipu")
    assert PICTURE_NAME not in files and files["notes.svg"] == b"<svg/>"
    assert "![the placement]" not in files["README.md"].decode()
    assert "Fine-tuned on SQuAD: **F1 88.5**." in files["README.md"].decode()


def test_push_to_hub_with_a_model_shows_its_placement_on_the_card(hub, bert):
    config = IPUConfig(**CONFIG)
    config.push_to_hub("org/bert-ipu", token=hub.write_token, model=bert, micro_batch_size=2, sequence_length=128)
    files = hub.files("org/bert-ipu")
    placement = config.placement(bert, micro_batch_size=2, sequence_length=128).to_dict()
    assert files[PICTURE_NAME].decode() == placement_svg(placement, "org/bert-ipu")
    card = ModelCard(files["README.md"].decode())
    assert card_markdown(placement, PICTURE_NAME, "org/bert-ipu") in card.text
    assert f"]({PICTURE_NAME})" in card.text
    headers, rows = placement_table(placement_view(placement))
    assert "| " + " | ".join(headers) + " |" in card.text and "| " + " | ".join(rows[1]) + " |" in card.text
    assert f"`ipu-config place org/bert-ipu --model {bert} --architecture BertForMaskedLM --micro-batch-size 2 " \
           "--sequence-length 128`" in card.text
    assert json.loads(files["ipu_config.json"])["layers_per_ipu"] == [6, 6]


def test_the_card_s_markdown_says_what_the_picture_shows(bert):
    placement = IPUConfig(**CONFIG).placement(bert).to_dict()
    text = card_markdown(placement, PICTURE_NAME, "org/bert-ipu")
    assert text.startswith(f"### Placement of `{bert}`\n\n")
    assert "**Fits: every IPU's on-chip figure is within the 672.8 MiB a reserve of 224.2 MiB leaves of an IPU's " \
           "897.0 MiB.**" in text
    assert "--micro-batch-size" not in text  # the parameters only
    assert text.count("\n| ") == 4  # the header, its rule, 2 IPUs


def test_an_option_without_a_model_or_a_model_that_cannot_be_placed_uploads_nothing(hub, bert):
    config = IPUConfig(**CONFIG)
    with pytest.raises(ValueError, match=r"`micro_batch_size` is 8, an option of the placement the model card shows, "
                                         r"and `model` is None"):
        config.push_to_hub("org/none", token=hub.write_token, micro_batch_size=8)
    with pytest.raises(PlacementError, match=r"`layers_per_ipu`: \[6, 5\] places 11 layers and the model has 12"):
        IPUConfig(layers_per_ipu=[6, 5]).push_to_hub("org/none", token=hub.write_token, model=bert)
    assert not hub.repo_exists("org/none")
    assert placement_attachment(config, "org/none", None) is None


def test_ipu_config_push_with_a_model(capsys, hub, bert, tmp_path, monkeypatch):
    monkeypatch.setenv("HF_TOKEN", hub.write_token)
    source = tmp_path / "ipu_config.json"
    IPUConfig(**CONFIG).to_json_file(str(source))
    code, out, err = run(capsys, "push", source, "org/bert-ipu", "--model", bert, "--micro-batch-size", "2",
                         "--architecture", "BertForQuestionAnswering")
    assert code == 0, err
    placement = IPUConfig(**CONFIG).placement(bert, micro_batch_size=2, architecture="BertForQuestionAnswering")
    assert hub.files("org/bert-ipu")[PICTURE_NAME].decode() == placement_svg(placement.to_dict(), "org/bert-ipu")
    assert "QA Outputs" in hub.files("org/bert-ipu")["README.md"].decode()


def test_ipu_config_push_with_a_placement_option_but_no_model_is_a_usage_error(capsys, hub, tmp_path):
    source = tmp_path / "ipu_config.json"
    IPUConfig(**CONFIG).to_json_file(str(source))
    code, _, err = run(capsys, "push", source, "org/bert-ipu", "--sequence-length", "128")
    assert code == 2 and "--sequence-length places a model on the card: give --model too" in err
    assert not hub.repo_exists("org/bert-ipu")
