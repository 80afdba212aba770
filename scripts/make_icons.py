#!/usr/bin/env python3
"""Draw the inbox's app icons (issue 41): a white tray with a check mark on the accent blue,
as PNGs of the sizes the web app manifest names, with no imaging library (zlib + struct).
`maskable` icons keep the drawing inside the central 80 % safe zone. Run from the repository
root; writes shared/http/src/ui/pwa/icon-*.png."""
import math
import struct
import zlib

BLUE = (0x0B, 0x5C, 0xAD)
WHITE = (0xFF, 0xFF, 0xFF)


def seg_dist(px, py, ax, ay, bx, by):
    dx, dy = bx - ax, by - ay
    t = max(0.0, min(1.0, ((px - ax) * dx + (py - ay) * dy) / (dx * dx + dy * dy)))
    return math.hypot(px - (ax + t * dx), py - (ay + t * dy))


def draw(size, maskable):
    scale = 0.62 if maskable else 0.8  # the drawing's share of the icon
    radius = 0.0 if maskable else 0.2 * size  # a full-bleed square for maskable
    rows = []
    for y in range(size):
        row = bytearray([0])  # filter: none
        for x in range(size):
            # normalised coordinates of the drawing, -1 … 1
            u = (x + 0.5 - size / 2) / (size / 2 * scale)
            v = (y + 0.5 - size / 2) / (size / 2 * scale)
            # rounded background square
            cx = max(abs(x + 0.5 - size / 2) - (size / 2 - radius), 0)
            cy = max(abs(y + 0.5 - size / 2) - (size / 2 - radius), 0)
            inside = math.hypot(cx, cy) <= radius if radius else True
            if not inside:
                row += bytes((0, 0, 0, 0))
                continue
            stroke = 0.09
            tray = (
                seg_dist(u, v, -0.8, 0.15, -0.8, 0.75) < stroke
                or seg_dist(u, v, -0.8, 0.75, 0.8, 0.75) < stroke
                or seg_dist(u, v, 0.8, 0.75, 0.8, 0.15) < stroke
            )
            check = seg_dist(u, v, -0.45, -0.2, -0.1, 0.15) < stroke * 1.2 or seg_dist(
                u, v, -0.1, 0.15, 0.55, -0.6
            ) < stroke * 1.2
            colour = WHITE if (tray or check) else BLUE
            row += bytes((*colour, 255))
        rows.append(bytes(row))
    raw = b"".join(rows)

    def chunk(kind, data):
        body = kind + data
        return struct.pack(">I", len(data)) + body + struct.pack(">I", zlib.crc32(body) & 0xFFFFFFFF)

    header = struct.pack(">IIBBBBB", size, size, 8, 6, 0, 0, 0)  # 8-bit RGBA
    return b"\x89PNG\r\n\x1a\n" + chunk(b"IHDR", header) + chunk(b"IDAT", zlib.compress(raw, 9)) + chunk(b"IEND", b"")


if __name__ == "__main__":
    for size, maskable, name in [(192, False, "icon-192"), (512, False, "icon-512"), (512, True, "icon-maskable-512"), (180, True, "apple-touch-icon")]:
        with open(f"shared/http/src/ui/pwa/{name}.png", "wb") as f:
            f.write(draw(size, maskable))
        print(name)
