"""Write every report of a corpus of placements and plans into a folder, to compare two versions of the package.

    python scripts/report_corpus.py OUT_DIR

Run it before and after a change that must not change what a user sees, on each test stack, and compare the folders
(`diff -r`). The corpus: each published config of tests/data/published_configs on its full-size model (`place`'s
text and JSON, with and without a micro-batch, inference, balanced for memory and for time, the SVG and the HTML page),
the tiny model of every architecture (training, inference and generation builds, each report the Python API gives:
text, JSON, SVG, page, model card, the balanced comparison), and `plan` of several models (text, JSON, SVG, page).
A command that fails writes its error: refusals are reports too.
"""

import contextlib
import io
import json
import sys
import traceback
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path[:0] = [str(ROOT), str(ROOT / "tests")]

from optimum_ipu_ext import IPUConfig  # noqa: E402
from optimum_ipu_ext.cli import main  # noqa: E402
from support.corpus import FULL_SIZE, INDEX, PUBLISHED_CONFIGS  # noqa: E402
from support.placement_models import TINY_MODELS  # noqa: E402

# the micro-batch and length `place` counts each kind of input for
SHAPES = {"text": ["--micro-batch-size", "2", "--sequence-length", "128"], "image": ["--micro-batch-size", "2"],
          "audio": ["--micro-batch-size", "1", "--sequence-length", "16000"]}
PLANS = [
    ("bert-large-pretraining", "bert-large-uncased", ["--architecture", "BertForPreTraining", "--ipus", "16",
                                                      "--global-batch-size", "16384", "--sequence-length", "128"]),
    ("bert-large-squad-graphcore", "bert-large-uncased",
     ["--architecture", "BertForQuestionAnswering", "--ipus", "16", "--global-batch-size", "256",
      "--sequence-length", "384", "--from", str(PUBLISHED_CONFIGS / "hub__Graphcore__bert-large-ipu@main.json")]),
    ("bert-base-inference", "bert-base-uncased", ["--architecture", "BertForSequenceClassification", "--ipus", "4",
                                                  "--inference", "--sequence-length", "128"]),
    ("gpt2-medium", "gpt2-medium", ["--ipus", "8", "--global-batch-size", "512", "--sequence-length", "1024",
                                    "--ipu", "bow"]),
    ("mt5-small", "mt5-small", ["--ipus", "4", "--global-batch-size", "512", "--sequence-length", "128",
                                "--decoder-sequence-length", "128"]),
    ("vit-base", "vit-base-patch16-224-in21k", ["--architecture", "ViTForImageClassification", "--ipus", "4",
                                                "--global-batch-size", "2048", "--micro-batch-size", "16"]),
    ("wav2vec2-base", "wav2vec2-base", ["--architecture", "Wav2Vec2ForCTC", "--ipus", "8", "--global-batch-size",
                                        "64", "--sequence-length", "80000"]),
    ("whisper-small-inference", "whisper-small", ["--ipus", "4", "--inference", "--sequence-length", "3000",
                                                  "--decoder-sequence-length", "448"]),
]


def cli(*argv: str) -> str:
    """`ipu-config ARGV` run here: its exit code, standard output and standard error, as one text."""
    out, err = io.StringIO(), io.StringIO()
    with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
        try:
            code = main(list(argv))
        except SystemExit as exit:
            code = exit.code
    return f"exit {code}\n--- stdout\n{out.getvalue()}--- stderr\n{err.getvalue()}"


def write(folder: Path, name: str, make, *arguments) -> None:
    """`make(*arguments)`'s text in `folder/name`, or the error it raised."""
    try:
        content = make(*arguments)
    except Exception:  # a refusal is a report too: its words are what the user reads
        content = "raised " + "".join(traceback.format_exception_only(*sys.exc_info()[:2]))
    (folder / name).write_text(content)


def published(out: Path) -> None:
    folder = out / "published"
    folder.mkdir()
    for entry in INDEX:
        model = entry["model"]
        if not model.get("full_size"):
            continue
        config = str(PUBLISHED_CONFIGS / entry["file"])
        base = ["place", config, "--model", str(FULL_SIZE / model["full_size"]), "--architecture",
                model["architecture"]]
        stem = entry["file"].removesuffix(".json")
        kind = "image" if "ViT" in model["architecture"] or "ConvNext" in model["architecture"] else \
            "audio" if any(word in model["architecture"] for word in ("Wav2Vec2", "Hubert")) else "text"
        shape = SHAPES[kind]
        write(folder, f"{stem}.txt", cli, *base)
        write(folder, f"{stem}.json.txt", cli, *base, "--json")
        write(folder, f"{stem}.inference.txt", cli, *base, "--inference")
        write(folder, f"{stem}.balanced.txt", cli, *base, "--balance")
        write(folder, f"{stem}.counted.txt", cli, *base, *shape)
        write(folder, f"{stem}.counted.json.txt", cli, *base, *shape, "--json", "--ipu", "bow")
        write(folder, f"{stem}.time.txt", cli, *base, *shape, "--balance", "time")
        svg, page = folder / f"{stem}.svg", folder / f"{stem}.html"
        write(folder, f"{stem}.pictures.txt", cli, *base, *shape, "--svg", str(svg), "--html", str(page))


def tiny(out: Path) -> None:
    from optimum_ipu_ext.placement.models import ARCHITECTURES
    from optimum_ipu_ext.placement.report.card import card_markdown
    from optimum_ipu_ext.placement.report.page import placement_page
    from optimum_ipu_ext.placement.report.placement_picture import placement_svg

    folder = out / "tiny"
    folder.mkdir()
    for architecture, tiny_model in TINY_MODELS.items():
        values = dict(tiny_model.config, model_type=ARCHITECTURES[architecture].model_types[0],
                      architectures=[architecture])
        builds = {"training": ({"ipus_per_replica": 2, "layers_per_ipu": [-1, -1],
                                "gradient_accumulation_steps": 16}, False),
                  "training-4": ({"ipus_per_replica": 4, "layers_per_ipu": [-1] * 4, "gradient_accumulation_steps": 8,
                                  "replication_factor": 2, "optimizer_state_offchip": True}, False),
                  "inference": ({"inference_ipus_per_replica": 2, "inference_layers_per_ipu": [-1, -1],
                                 "inference_device_iterations": 4}, True)}
        if architecture.endswith(("ConditionalGeneration", "Summarization")) or "Whisper" in architecture:
            builds["generation"] = ({"inference_ipus_per_replica": 2, "inference_layers_per_ipu": [-1, -1],
                                     "inference_parallelize_kwargs": {"for_generation": True}}, True)
        for build, (settings, for_inference) in builds.items():
            stem = f"{architecture}.{build}"

            shape = {"micro_batch_size": 2}
            if "Whisper" in architecture:
                shape["sequence_length"] = 2 * values["max_source_positions"]
            config = IPUConfig(**settings)
            write(folder, f"{stem}.txt", placement_text, config, values, architecture, for_inference)
            try:
                placer = config.placer(values, architecture=architecture, for_inference=for_inference, **shape)
            except Exception:  # its refusal is written above
                continue
            placed = placer.place()
            data = placed.to_dict()
            write(folder, f"{stem}.counted.txt", str, placed)
            write(folder, f"{stem}.json", placed.to_json_string)
            write(folder, f"{stem}.svg", placement_svg, data, "tiny")
            write(folder, f"{stem}.html", placement_page, data, "tiny")
            write(folder, f"{stem}.card.md", card_markdown, data, "p.svg", "org/c")
            for objective in ("memory", "time"):
                write(folder, f"{stem}.balanced-{objective}.txt", balanced, placer, objective)


def placement_text(config, *placed) -> str:
    return str(config.placement(placed[0], architecture=placed[1], for_inference=placed[2]))


def balanced(placer, objective: str) -> str:
    from optimum_ipu_ext.placement.report.text import comparison_text

    placement = placer.place()
    proposal = placer.balanced(placement, objective)
    return comparison_text(placement.to_dict(), proposal.to_dict(), objective=objective) + "\n" + \
        proposal.to_json_string()


def plans(out: Path) -> None:
    folder = out / "plans"
    folder.mkdir()
    for name, model, arguments in PLANS:
        base = ["plan", "--model", str(FULL_SIZE / model), *arguments]
        write(folder, f"{name}.txt", cli, *base)
        write(folder, f"{name}.json.txt", cli, *base, "--json")
        svg, page = folder / f"{name}.svg", folder / f"{name}.html"
        write(folder, f"{name}.pictures.txt", cli, *base, "--svg", str(svg), "--html", str(page), "--top", "3")


def run(out: Path) -> None:
    out.mkdir(parents=True)
    published(out)
    tiny(out)
    plans(out)
    files = sorted(str(path.relative_to(out)) for path in out.rglob("*"))
    (out / "INDEX.json").write_text(json.dumps(files, indent=1))


if __name__ == "__main__":
    run(Path(sys.argv[1]))
