"""Card images as a guest meets them: a qcow2 container, and a FAT32 file
system with known files read the way an operating system would (boot
sector, FAT, directories, cluster chains; Microsoft FAT specification)."""

from __future__ import annotations

from harness import images
from harness.driver.host import HostDriver
from harness.driver.results import Mode
from harness.scenarios.common import expect_pattern, ready, test_data
from harness.scenarios.registry import Context, scenario
from harness.target import Target


@scenario("qcow2-read-write-erase", "images", image="sdsc-16m-qcow2", needs_clock=True)
def _qcow2(t: Target, ctx: Context) -> None:
    """Read, write and erase through QEMU's qcow2 driver; the card must not
    see the container (the model reads the raw twin)."""
    d = ready(t)
    expect_pattern(ctx, d.read_blocks(0, 4, mode=Mode.ADMA2).data, 0, "qcow2 read")
    d.write_blocks(100, test_data(8 * 512, 1), mode=Mode.SDMA)
    d.erase(200, 207)
    d.read_blocks(96, 16)
    d.read_blocks(196, 16)


class Fat32:
    """A read-only FAT32 walker over the host driver (512-byte sectors)."""

    def __init__(self, d: HostDriver) -> None:
        self.d = d
        bpb = self.sector(0)
        self.signature = bpb[510:512]
        self.bytes_per_sector = int.from_bytes(bpb[11:13], "little")
        self.sectors_per_cluster = bpb[13]
        self.reserved = int.from_bytes(bpb[14:16], "little")
        self.fats = bpb[16]
        self.fat_size = int.from_bytes(bpb[36:40], "little")
        self.root = int.from_bytes(bpb[44:48], "little")
        self.fs_type = bpb[82:90]
        self.first_data = self.reserved + self.fats * self.fat_size

    def sector(self, n: int, count: int = 1) -> bytes:
        return self.d.read_blocks(n, count, mode=Mode.ADMA2).data or b""

    def next_cluster(self, c: int) -> int:
        off = c * 4
        sec = self.sector(self.reserved + off // 512)
        return int.from_bytes(sec[off % 512 : off % 512 + 4], "little") & 0x0FFFFFFF

    def chain(self, first: int) -> bytes:
        out = bytearray()
        c, hops = first, 0
        while 2 <= c < 0x0FFFFFF8 and hops < 4096:
            s = self.first_data + (c - 2) * self.sectors_per_cluster
            out += self.sector(s, self.sectors_per_cluster)
            c, hops = self.next_cluster(c), hops + 1
        return bytes(out)

    def listdir(self, cluster: int) -> dict[str, tuple[int, int, bool]]:
        """Short name -> (first cluster, size, is directory)."""
        raw = self.chain(cluster)
        out: dict[str, tuple[int, int, bool]] = {}
        for i in range(0, len(raw), 32):
            e = raw[i : i + 32]
            if e[0] == 0:
                break
            if e[0] == 0xE5 or e[11] == 0x0F or e[11] & 0x08:
                continue  # deleted, long-name part, volume label
            base, ext = e[0:8].decode("ascii").strip(), e[8:11].decode("ascii").strip()
            name = f"{base}.{ext}" if ext else base
            first = int.from_bytes(e[20:22], "little") << 16 | int.from_bytes(e[26:28], "little")
            out[name] = (first, int.from_bytes(e[28:32], "little"), bool(e[11] & 0x10))
        return out

    def read(self, path: str) -> bytes | None:
        cluster = self.root
        parts = path.split("/")
        for i, part in enumerate(parts):
            entries = self.listdir(cluster)
            if part not in entries:
                return None
            first, size, is_dir = entries[part]
            if i == len(parts) - 1:
                return None if is_dir else self.chain(first)[:size]
            cluster = first
        return None


@scenario("fat32-known-files", "images", image="fat32-64m", needs_clock=True)
def _fat32(t: Target, ctx: Context) -> None:
    """Walk the FAT32 file system like a guest would and read every file the
    recipe put there; the contents must be the recipe's."""
    fs = Fat32(ready(t))
    ctx.expect(fs.signature == b"\x55\xaa", "boot sector signature 55AA")
    ctx.expect(fs.fs_type == b"FAT32   ", "BS_FilSysType is FAT32")
    ctx.expect(fs.bytes_per_sector == 512, "512-byte sectors")
    files = images.recipe(ctx.image).file_contents() if ctx.image else {}
    for path, want in files.items():
        ctx.expect(fs.read(path) == want, f"{path} reads back as the recipe wrote it")
