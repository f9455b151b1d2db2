import json

import pandas as pd

from analyses.demo import DemoConfig, run_demo


def test_demo_writes_table_summary_manifest_and_report(tmp_path, capsys):
    cfg = DemoConfig(
        out=tmp_path / "demo",
        quick=True,
        quick_steps=40,
        preset="tiny",
        task_params={"V": 6},
        progress=False,
    )
    summary = run_demo(cfg)
    out = capsys.readouterr().out
    assert "transformer" in out and "mlp-flat" in out and "report:" in out
    table = pd.read_parquet(tmp_path / "demo" / "table.parquet")
    assert list(table["arch"]) == ["transformer", "mlp-position", "mlp-flat"]
    assert table["entropy_mae_bits"].notna().all()
    assert json.loads((tmp_path / "demo" / "summary.json").read_text()) == json.loads(
        json.dumps(summary)
    )
    assert json.loads((tmp_path / "demo" / "manifest.json").read_text())["versions"]["torch"]
    html = (tmp_path / "demo" / "report.html").read_text()
    assert html.count("<script") >= 1 and "Run manifest" in html
    assert 'src="https://cdn.plot.ly' not in html  # plotly.js is embedded, not fetched
    # a rerun reuses the trained runs
    mtime = (
        tmp_path / "demo" / "windtunnel" / "transformer" / "model" / "model.safetensors"
    ).stat()
    run_demo(cfg)
    after = (
        tmp_path / "demo" / "windtunnel" / "transformer" / "model" / "model.safetensors"
    ).stat()
    assert after.st_mtime_ns == mtime.st_mtime_ns
