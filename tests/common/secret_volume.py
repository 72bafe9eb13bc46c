"""A directory laid out as the kubelet writes a Secret volume, for tests of certificate rotation."""

from __future__ import annotations

import time
from pathlib import Path

from dra_migrate.certs import generate


class SecretVolume:
    """Mimics the kubelet's atomic writer for a Secret volume.

    Layout: `..<timestamp>/tls.crt`, `..data -> ..<timestamp>`, `tls.crt -> ..data/tls.crt`.
    An update writes a fresh timestamped directory, renames a `..data_tmp` symlink onto
    `..data` (the atomic step) and then deletes the old directory.
    """

    def __init__(self, root: Path) -> None:
        self.root = root
        self.root.mkdir(parents=True, exist_ok=True)
        self._generation = 0

    def path(self, name: str) -> Path:
        return self.root / name

    def publish(self, files: dict[str, bytes]) -> None:
        self._generation += 1
        stamp = time.strftime("%Y_%m_%d_%H_%M_%S")
        new_dir = self.root / f"..{stamp}.{self._generation:06d}"
        new_dir.mkdir()
        for name, data in files.items():
            (new_dir / name).write_bytes(data)
        data_link = self.root / "..data"
        old_dir = data_link.resolve() if data_link.is_symlink() else None
        tmp_link = self.root / "..data_tmp"
        tmp_link.symlink_to(new_dir.name)
        tmp_link.replace(data_link)
        for name in files:
            link = self.root / name
            if not link.is_symlink():
                link.symlink_to(Path("..data") / name)
        if old_dir is not None:
            for child in old_dir.iterdir():
                child.unlink()
            old_dir.rmdir()

    def publish_pair(self, leaf: generate.CertifiedKey, key_from: generate.CertifiedKey | None = None) -> None:
        self.publish({"tls.crt": leaf.cert_pem(), "tls.key": (key_from or leaf).key_pem()})
