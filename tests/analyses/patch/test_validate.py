"""bayesgeom patch refuses bad input in one line before any model loads: a site the model lacks,
a head out of range, reads past the task's, a pairs file that is empty, malformed or (with the
tokenizer on this machine) holds pairs of unequal token length; the torch-free readers of a
wind tunnel's shape and reads."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from bayesgeom.analyses.cli import main
from bayesgeom.analyses.kit.errors import ExperimentError
from bayesgeom.analyses.patch.config import PatchConfig, tunnel_shape
from bayesgeom.analyses.patch.pairs_file import read_pairs_file, token_problem
from bayesgeom.interp.patch_cells import ModelShape
from bayesgeom.windtunnel.run_identity import known_reads

ROOT = Path(__file__).resolve().parents[3]
BIJ = str(ROOT / "tunnels" / "bijection-v20")
HMM = str(ROOT / "tunnels" / "hmm-k20")


@pytest.fixture
def no_model(monkeypatch: pytest.MonkeyPatch) -> list[str]:
    """Every way the run opens a model replaced by a recorder (nothing may be called)."""
    import bayesgeom.analyses.kit.models as models  # run_patch opens through kit.models.model_of

    called: list[str] = []
    monkeypatch.setattr(models, "open_model", lambda *a, **k: called.append("open_model"))
    return called


def _refused(argv: list[str], capsys: pytest.CaptureFixture[str]) -> str:
    status = main(argv)
    err = [x for x in capsys.readouterr().err.splitlines() if x.strip()]
    assert status == 2, err
    assert len(err) == 1 and err[0].startswith("bayesgeom: error: "), err
    return err[0]


@pytest.mark.parametrize("extra, want", [
    (["--sites", "resid_mid"], "'resid_mid' is not one"),
    (["--sites", "resid_pre,resid_pre"], "give distinct site kinds"),
    (["--heads", "6"], "head 6 does not exist at attn.0.z: the model has heads 0..5"),
    (["--layers", "6"], "layer 6 does not exist"),
    (["--directions", "sideways"], "give denoising, noising"),
    (["--edit-at", "17", "--n-reads", "4"], "needs 21 reads; this task has 19"),
    (["--n-pairs", "1"], "n_pairs must be >= 2"),
    (["--tail", "3"], "--tail applies to text models only"),
])
def test_bad_input_on_a_tunnel_is_one_line(extra: list[str], want: str, tmp_path: Path,
                                            no_model: list[str],
                                            capsys: pytest.CaptureFixture[str]) -> None:
    line = _refused(["patch", "--model", BIJ, *extra, "--out", str(tmp_path / "o")], capsys)
    assert want in line, line
    assert no_model == [] and not (tmp_path / "o").exists()


def _write(path: Path, rows: list[dict]) -> Path:
    path.write_text("".join(json.dumps(r) + "\n" for r in rows))
    return path


PAIR = {"clean": "the cat sat", "corrupt": "the dog sat", "answer": " on", "foil": " in"}


@pytest.mark.parametrize("rows, want", [
    ([], "the file holds no pair (an empty pair set)"),
    ([{"clean": "a"}], 'missing "corrupt", "answer", "foil"'),
    ([{**PAIR, "foil": " on"}], "answer and foil are the same"),
    ([PAIR], "1 pair; the intervals and the unrelated-source control need at least 2"),
])
def test_a_bad_pairs_file_is_one_line(rows: list[dict], want: str, tmp_path: Path,
                                      no_model: list[str],
                                      capsys: pytest.CaptureFixture[str]) -> None:
    f = _write(tmp_path / "p.jsonl", rows)
    line = _refused(["patch", "--pairs", str(f), "--out", str(tmp_path / "o")], capsys)
    assert want in line, line
    assert no_model == []


def test_a_pairs_file_is_refused_for_a_tunnel(tmp_path: Path, no_model: list[str],
                                              capsys: pytest.CaptureFixture[str]) -> None:
    f = _write(tmp_path / "p.jsonl", [PAIR, PAIR])
    line = _refused(["patch", "--model", BIJ, "--pairs", str(f), "--out", str(tmp_path / "o")],
                    capsys)
    assert "--pairs applies to text models only" in line


class WordTokenizer:
    """Splits on spaces, one id per word (answers keep their leading space)."""

    def encode(self, text: str, add_special_tokens: bool = False) -> list[int]:
        return [hash(w) % 1000 for w in text.split()]

    def __call__(self, texts: list[str], add_special_tokens: bool = True) -> dict:
        return {"input_ids": [[0, *self.encode(t)] for t in texts]}


def test_token_problems_name_the_pair(tmp_path: Path) -> None:
    tok = WordTokenizer()
    rows = read_pairs_file(_write(tmp_path / "p.jsonl",
                                  [PAIR, {**PAIR, "corrupt": "the big dog sat"}]))
    assert token_problem(tok, rows).startswith("pair 1: the clean prompt has 4 tokens, the "
                                               "corrupt one 5")
    rows = read_pairs_file(_write(tmp_path / "p.jsonl",
                                  [PAIR, {**PAIR, "answer": " on top"}]))
    assert token_problem(tok, rows).startswith("pair 1: answer ' on top' is 2 tokens")
    rows = read_pairs_file(_write(tmp_path / "p.jsonl",
                                  [PAIR, {**PAIR, "clean": "a b c d", "corrupt": "a b c e"}]))
    assert "no two pairs have the same token length" in token_problem(tok, rows)
    rows = read_pairs_file(_write(tmp_path / "p.jsonl",
                                  [PAIR, PAIR]))
    assert token_problem(tok, rows) is None


def test_unequal_lengths_are_refused_before_the_model_loads(
        text_models: dict[str, Path], tmp_path: Path, no_model: list[str],
        capsys: pytest.CaptureFixture[str]) -> None:
    """A local model folder's tokenizer is read before its weights: a pair whose prompts differ
    in length is refused with nothing loaded."""
    f = _write(tmp_path / "p.jsonl", [PAIR, {**PAIR, "corrupt": "the big dog sat"}])
    line = _refused(["patch", "--model", str(text_models["llama"]), "--pairs", str(f),
                     "--out", str(tmp_path / "o")], capsys)
    assert "pair 1: the clean prompt has" in line and "equal lengths" in line
    assert no_model == []


def test_a_tunnels_shape_and_reads_are_read_without_torch() -> None:
    assert tunnel_shape(HMM) == (HMM, ModelShape(9, 8, 8))
    assert tunnel_shape("/nonexistent") is None
    assert known_reads(HMM) == 20 and known_reads(BIJ) == 19
    PatchConfig(model=HMM, out=Path("/tmp/unused-patch-out"), edit_at=16, n_reads=4).check()


def test_a_model_without_heads_drops_the_head_kinds_by_default(tmp_path: Path) -> None:
    """An LSTM-like tunnel (a preset without n_head): the defaults leave out attn.*, and an
    explicit attn.z is refused."""
    run = tmp_path / "lstm"
    (run / "model").mkdir(parents=True)
    (run / "run.json").write_text('{"experiment": "windtunnel train"}')
    (run / "model" / "config.json").write_text(
        '{"model_type": "bayesgeom_lstm", "bayesgeom_preset": {"n_layer": 2, "d_model": 8}}')
    PatchConfig(model=str(run), out=tmp_path / "o").check()
    with pytest.raises(Exception, match="the model has no attention heads"):
        PatchConfig(model=str(run), sites=("attn.z",), out=tmp_path / "o2").check()


def test_the_default_pairs_suit_each_kind_of_model(tmp_path: Path) -> None:
    """No --n-pairs: 30 SULA pairs (10 per example count) on a text model, 32 on a wind tunnel,
    the counts the checks accept; a given count is kept, and refused for SULA if not a
    multiple of 3."""
    text = PatchConfig(out=tmp_path / "o")  # the embedded SmolLM2
    text.check()
    assert text.sized().n_pairs == 30 and text.sized().n_pairs % 3 == 0
    assert PatchConfig(model=BIJ, out=tmp_path / "o").sized().n_pairs == 32
    assert PatchConfig(out=tmp_path / "o", n_pairs=12).sized().n_pairs == 12
    assert PatchConfig(out=tmp_path / "o", quick=True).sized().n_pairs == 6
    with pytest.raises(ExperimentError, match="give a multiple of 3"):
        PatchConfig(out=tmp_path / "o", n_pairs=32).check()
