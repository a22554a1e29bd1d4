"""The one output rule and the one input rule (spades_env/files.py), on private devices and FIFOs
(never the real /dev/null): what is refused, what is left behind, what stays a device."""

from __future__ import annotations

import os
import stat

import pytest
import torch

from spades_env import files
from spades_env.files import FileRuleError

from helpers_files import is_char_device, leftovers, private_device, private_fifo


# ---------------------------------------------------------------------------------------------- output
def test_devices_fifos_folders_and_paths_under_files_are_refused_as_outputs(tmp_path):
    device, fifo = private_device(tmp_path), private_fifo(tmp_path)
    (tmp_path / "FILE").write_text("x")
    cases = {device: "is a device, not a regular file", fifo: "is a FIFO, not a regular file",
             tmp_path: "is a folder: expected a file", tmp_path / "FILE" / "m.pt": "FILE is not a folder",
             f"{tmp_path}/newdir/": "ends in a slash", "": "an empty path"}
    for path, expected in cases.items():
        with pytest.raises(FileRuleError, match=expected):
            files.check_output(path, "--out")
        with pytest.raises(FileRuleError, match=expected):
            files.write_bytes(path, b"data", "--out")
    assert is_char_device(device) and stat.S_ISFIFO(os.stat(fifo).st_mode)
    assert not leftovers(tmp_path) and not (tmp_path / "newdir").exists()


def test_a_new_path_and_a_regular_file_are_written_atomically_folders_made(tmp_path):
    target = tmp_path / "a" / "b" / "out.json"
    assert files.check_output(target) == target and not (tmp_path / "a").exists()       # nothing created
    files.write_json(target, {"x": 1})
    files.write_json(target, {"x": 2})
    assert target.read_text() == '{\n "x": 2\n}\n' and not leftovers(tmp_path)


def test_the_output_may_not_be_an_input_by_name_by_link_or_by_hard_link(tmp_path):
    source = tmp_path / "model.pt"
    source.write_bytes(b"model")
    (tmp_path / "link.pt").symlink_to(source)
    os.link(source, tmp_path / "hard.pt")
    for out in (source, tmp_path / "link.pt", tmp_path / "hard.pt", tmp_path / "." / "model.pt"):
        with pytest.raises(FileRuleError, match="is the input"):
            files.check_output(out, "out", inputs=[source])


@pytest.mark.skipif(os.geteuid() != 0, reason="as root a read-only folder is writable: the rule must say no")
def test_read_only_files_and_folders_are_refused_even_to_root(tmp_path):
    folder = tmp_path / "ro"
    folder.mkdir()
    (folder / "old.json").write_text("{}")
    (folder / "old.json").chmod(0o444)
    folder.chmod(0o555)
    with pytest.raises(FileRuleError, match="read-only"):
        files.check_output(folder / "new.json")
    with pytest.raises(FileRuleError, match="read-only"):
        files.check_output(folder / "old.json")
    with pytest.raises(FileRuleError, match="read-only"):
        files.check_output_folder(folder)


def test_the_tmp_is_removed_whatever_fails_and_the_old_file_kept(tmp_path):
    target = tmp_path / "out.pt"
    target.write_bytes(b"old")

    def failing(file):
        file.write(b"half")
        raise RuntimeError("killed mid-write")
    with pytest.raises(RuntimeError):
        files.write_atomic(target, failing)
    assert target.read_bytes() == b"old" and not leftovers(tmp_path)


def test_a_device_that_appears_during_the_write_is_not_renamed_onto(tmp_path):
    """The target is checked again right before os.replace: as root, a rename onto a device
    replaces the device with a regular file."""
    target = tmp_path / "out.pt"

    def a_device_appears(file):
        file.write(b"data")
        os.mknod(target, stat.S_IFCHR | 0o666, os.makedev(1, 3))
    with pytest.raises(FileRuleError, match="is now a device"):
        files.write_atomic(target, a_device_appears)
    assert is_char_device(target) and not leftovers(tmp_path)


def test_a_link_is_kept_and_what_it_leads_to_replaced(tmp_path):
    real = tmp_path / "real.json"
    real.write_text("{}")
    (tmp_path / "link.json").symlink_to(real)
    files.write_text(tmp_path / "link.json", "new")
    assert (tmp_path / "link.json").is_symlink() and real.read_text() == "new"
    device = private_device(tmp_path)
    (tmp_path / "to_device").symlink_to(device)
    with pytest.raises(FileRuleError, match="is a device"):
        files.write_text(tmp_path / "to_device", "x")
    assert is_char_device(device)


def test_only_json_and_plots_go_to_a_stream_written_in_place(tmp_path, capfd):
    fifo = private_fifo(tmp_path)
    assert files.check_output("/dev/stdout", "--json", stream_ok=True) is not None
    with pytest.raises(FileRuleError):
        files.check_output("/dev/stdout", "--out")              # a model is renamed into place: never a stream
    assert files.check_output(fifo, "--json", stream_ok=True) == fifo
    device = private_device(tmp_path, "full", minor=7)          # a device that is not a stream's name
    with pytest.raises(FileRuleError, match="is a device"):
        files.check_output(device, "--json", stream_ok=True)
    files.write_json("/dev/stdout", {"streamed": True})
    assert '"streamed": true' in capfd.readouterr().out


# ----------------------------------------------------------------------------------------------- input
def test_devices_fifos_folders_and_large_files_are_refused_before_reading(tmp_path):
    zero, fifo = private_device(tmp_path, "zero", minor=5), private_fifo(tmp_path)
    (tmp_path / "link").symlink_to(zero)
    big = tmp_path / "big.bin"
    big.write_bytes(b"x" * 2048)
    cases = {zero: "is a device, not a regular file", fifo: "is a FIFO", tmp_path / "link": "is a device",
             tmp_path: "is a folder", tmp_path / "missing": "not found", big: "2,048 bytes; expected at most 1,024"}
    for path, expected in cases.items():
        for read in (files.read_bytes, files.file_sha256, files.open_input):
            with pytest.raises(FileRuleError, match=expected):
                read(path, "--student", 1024)


def test_a_hash_is_the_files_sha256(tmp_path):
    import hashlib
    path = tmp_path / "f.bin"
    path.write_bytes(os.urandom(3 * 1024 * 1024 + 5))
    assert files.file_sha256(path) == hashlib.sha256(path.read_bytes()).hexdigest()


def test_json_is_measured_before_it_is_parsed(tmp_path):
    assert files.json_shape('{"a": "[[[[", "b": [1, [2]], "c": "\\"["}') == (3, 3)
    assert files.json_shape("[" * 200_000 + "]" * 200_000) == (200_000, 200_000)
    (tmp_path / "deep.json").write_text("[" * 200_000 + "]" * 200_000)
    with pytest.raises(FileRuleError, match="nested 200,000 levels deep"):
        files.read_json(tmp_path / "deep.json")
    (tmp_path / "bad.json").write_bytes(b"\xff\xfe")
    with pytest.raises(FileRuleError, match="not UTF-8"):
        files.read_json(tmp_path / "bad.json")
    (tmp_path / "torn.json").write_text('{"a": ')
    with pytest.raises(FileRuleError, match="not valid JSON"):
        files.read_json(tmp_path / "torn.json")


class _Code:
    def __reduce__(self):
        return (os.system, ("echo pwned",))


def test_torch_files_load_weights_only_and_every_failure_is_one_line(tmp_path):
    good = tmp_path / "good.pt"
    files.save_torch({"w": torch.ones(2)}, good)
    assert torch.equal(files.load_torch(good)["w"], torch.ones(2))
    (tmp_path / "junk.pt").write_bytes(b"not a zip")
    torch.save({"w": _Code()}, tmp_path / "code.pt")
    (tmp_path / "torn.pt").write_bytes(good.read_bytes()[:200])
    for name, expected in (("junk.pt", "not a torch archive"), ("code.pt", "UnpicklingError"),
                           ("torn.pt", "expected a file written by torch.save")):
        with pytest.raises(FileRuleError, match=expected) as refused:
            files.load_torch(tmp_path / name, "model")
        assert "\n" not in str(refused.value) and name in str(refused.value)


def test_an_archive_that_unpacks_past_the_bound_is_refused_from_its_directory(tmp_path):
    import zipfile
    bomb = tmp_path / "bomb.pt"
    with zipfile.ZipFile(bomb, "w", compression=zipfile.ZIP_DEFLATED) as archive:
        archive.writestr("archive/data/0", b"\0" * 5_000_000)
    assert bomb.stat().st_size < 100_000
    with pytest.raises(FileRuleError, match="unpacks to 5,000,000 bytes; expected at most 1,000,000"):
        files.load_torch(bomb, "model", max_bytes=1_000_000)
