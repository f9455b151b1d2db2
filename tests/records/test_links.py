"""A broken symbolic link is named in one line (issue 38, cause 8: ``--out`` pointing nowhere
said "File exists")."""

from __future__ import annotations

from bayesgeom.records.links import broken_link


def test_a_dangling_link_names_its_target(tmp_path):
    (tmp_path / "out").symlink_to(tmp_path / "gone")
    assert broken_link(tmp_path / "out") == (f"{tmp_path / 'out'} is a symbolic link to "
                                             f"{tmp_path / 'gone'}, which does not exist")


def test_a_looping_link_and_one_below_it_are_named(tmp_path):
    (tmp_path / "a").symlink_to("b")
    (tmp_path / "b").symlink_to("a")
    assert "is a symbolic link that loops" in broken_link(tmp_path / "a")
    assert "lies under a symbolic link that loops" in broken_link(tmp_path / "a" / "run")


def test_plain_paths_and_working_links_pass(tmp_path):
    (tmp_path / "d").mkdir()
    (tmp_path / "ok").symlink_to(tmp_path / "d")
    for p in (tmp_path / "d", tmp_path / "ok", tmp_path / "new", tmp_path / "d" / "new"):
        assert broken_link(p) is None
