"""The IPU config section of a repository's model card (`README.md`): written between two markers, rewritten on every
push, the rest of the card kept as the user wrote it."""

import json
from typing import Any, Dict, List, NamedTuple, Optional, Sequence

from huggingface_hub import (
    ModelCard,
    ModelCardData,
)

from ..settings.table import EXTENSION_SETTINGS

CARD_NAME = "README.md"


CARD_TAGS = ("ipu", "graphcore", "ipu-config", "optimum-graphcore", "optimum-ipu-ext")


SECTION_START = "<!-- optimum-ipu-ext: start of the IPU config section, rewritten on every push -->"


SECTION_END = "<!-- optimum-ipu-ext: end of the IPU config section -->"


# the picture the section shows, committed beside the card: a Hub model card shows a Markdown image of a file of its
# repository (the Hub's renderer keeps no inline SVG); the section's own, so a push without one deletes it
PICTURE_NAME = "ipu_config_placement.svg"


class CardAttachment(NamedTuple):
    """What a push adds to the section, as data the hub layer does not read: `markdown`, written in the section
    before its "Use it", and `files` (`{path: content}`, as `PICTURE_NAME`) committed with the card."""

    markdown: str
    files: Dict[str, bytes]


def card_text(config: Any, repo_id: str, existing: Optional[str] = None, tags: Sequence[str] = (),
              extra: str = "") -> str:
    """The `README.md` to push with `config`: `existing` (the repository's card) with the IPU config section added
    or replaced, and the metadata it lacks; a new card when there is none. `extra`: Markdown the section holds before
    its "Use it" (a placement's picture and table, `CardAttachment.markdown`).

    Everything outside the section is kept byte for byte, except the metadata block when it lacks a key the card
    needs (`library_name`, the IPU tags): the client's card API then writes the block again, with every key kept.
    `library_name` is set only when absent: optimum-graphcore when its own `IPUConfig` loads the file, else
    optimum-ipu-ext.
    """
    saved = json.loads(config.to_json_string())
    extension = [name for name in saved if name in EXTENSION_SETTINGS]
    library = "optimum-ipu-ext" if extension else "optimum-graphcore"
    section = f"{SECTION_START}\n{_card_body(config, repo_id, extension, extra)}{SECTION_END}\n"
    wanted_tags = list(dict.fromkeys(CARD_TAGS + tuple(tags)))
    if existing is None:
        data = ModelCardData(library_name=library, tags=wanted_tags)
        return f"---\n{data.to_yaml()}\n---\n\n{section}"
    try:
        card = ModelCard(existing)
    except Exception as error:  # the card's YAML is not a mapping, or not YAML
        raise ValueError(f"its {CARD_NAME} has a metadata block that cannot be read ({error}); fix it, then push "
                         "again") from error
    line_break = "\r\n" if "\r\n" in existing else "\n"
    text = _with_section(card.text, section.replace("\n", line_break), line_break)
    present = list(card.data.tags or [])
    if card.data.library_name and all(tag in present for tag in wanted_tags):
        return existing[: len(existing) - len(card.text)] + text  # the metadata block as it was
    card.data.library_name = card.data.library_name or library
    card.data.tags = present + [tag for tag in wanted_tags if tag not in present]
    card.text = text
    return card.content


def _with_section(text: str, section: str, line_break: str) -> str:
    """`text` with the IPU config section replaced in place, or appended when it has none."""
    starts, ends = text.count(SECTION_START), text.count(SECTION_END)
    if starts == ends == 0:
        separator = "" if not text or text.endswith(line_break) else line_break
        return f"{text}{separator}{line_break if text.strip() else ''}{section}"
    start, end = text.find(SECTION_START), text.find(SECTION_END)
    if starts != 1 or ends != 1 or end < start:
        raise ValueError(f"its {CARD_NAME} should hold the IPU config section once, between the lines "
                         f"'{SECTION_START}' and '{SECTION_END}'; repair the card, then push again")
    end += len(SECTION_END)
    end += len(line_break) if text.startswith(line_break, end) else 0
    return text[:start] + section + text[end:]


def _card_body(config: Any, repo_id: str, extension: List[str], extra: str = "") -> str:
    training, inference = config.batch_size_factor(), config.batch_size_factor(for_inference=True)
    rows = [
        ("pipeline length (IPUs per replica)", config.ipus_per_replica, config.inference_ipus_per_replica),
        ("replication factor", config.replication_factor, config.inference_replication_factor),
        ("IPUs in use", config.ipus_per_replica * config.replication_factor,
         config.inference_ipus_per_replica * config.inference_replication_factor),
        ("gradient accumulation steps", config.gradient_accumulation_steps, "-"),
        ("device iterations", config.device_iterations, config.inference_device_iterations),
        ("combined batch size factor", training, inference),
    ]
    lines = [
        "## IPU configuration",
        "",
        "`ipu_config.json` is an `IPUConfig` for "
        "[optimum-graphcore](https://github.com/huggingface/optimum-graphcore): how a model is pipelined over "
        "Graphcore IPUs, replicated and fed, and the PopTorch/PopART options of the build.",
        "",
        "| | training | inference |",
        "| --- | --- | --- |",
        *(f"| {name} | {train} | {infer} |" for name, train, infer in rows),
        "",
        "Combined batch size = micro batch size x combined batch size factor (replication factor x gradient "
        "accumulation steps x device iterations).",
        "",
        "### Settings that differ from the defaults",
        "",
        *_non_default_rows(config),
        "",
        *([extra.rstrip("\n"), ""] if extra else []),
        "### Use it",
        "",
        "```python",
        "from optimum_ipu_ext import IPUConfig",
        "",
        f'ipu_config = IPUConfig.from_pretrained("{repo_id}")',
        "print(ipu_config.options_plan())  # the poptorch.Options calls it makes",
        "```",
        "",
    ]
    if extension:
        names = ", ".join(f"`{name}`" for name in extension)
        lines.append(f"It uses settings of optimum-ipu-ext ({names}), so optimum-graphcore's own `IPUConfig` cannot "
                     "load it.")
    else:
        lines.append("optimum-graphcore's own `IPUConfig.from_pretrained` loads it too.")
    lines += ["", "optimum-ipu-ext writes this section from the config and rewrites it on every push; it leaves the "
              "rest of the card as it is."]
    return "\n".join(lines) + "\n"


def _non_default_rows(config: Any) -> List[str]:
    """Table rows of the settings that differ from a default config's. An `inference_` setting that only
    repeats its training value is left out."""
    rows = [
        f"| `{name}` | `{json.dumps(value)}` | `{json.dumps(default)}` |"
        for name, (value, default) in config.non_default_settings().items()
        if not (name.startswith("inference_") and getattr(config, name[len("inference_"):], None) == value)
    ]
    if not rows:
        return ["None: every setting has its default."]
    return ["| setting | value | default |", "| --- | --- | --- |", *rows]
