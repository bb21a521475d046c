"""Generate the optotype outlines in ``visiontune/data/stimuli/*.json`` (our own drawings).

Run ``python stimuli/make_letter_sets.py`` from the repository root. Every glyph is drawn
here on the 5 x 5 design grid (grid units, y up, origin at the bottom-left corner) with a
stroke of 1 unit (1/5 of the height), as a list of closed rings filled with the even-odd
rule: solid pieces are counter-clockwise, holes clockwise, and pieces never overlap (each
piece is a convex or arc polygon clipped by half-planes), so even-odd and non-zero fills
agree. Arcs are sampled every 2 degrees. None of this is copied from a font: Pelli's Sloan
font may not be redistributed (see docs/design.md), so these are independent drawings of
the Sloan design rules (5 x 5 grid, stroke = height / 5).
"""

from __future__ import annotations

import json
import math
from pathlib import Path

S = 1.0  # stroke, grid units
H = 5.0  # design height, grid units
BIG = 50.0
OUT = Path(__file__).resolve().parent.parent / "visiontune" / "data" / "stimuli"
NOTE = (
    "Our own drawings (VisionTune, stimuli/make_letter_sets.py) on the 5 x 5 Sloan design grid, "
    "stroke = 1/5 of the height; not derived from any font. Coordinates in grid units, y up, "
    "origin bottom-left; rings filled with the even-odd rule (holes are separate rings)."
)


def box(x0, y0, x1, y1):
    return [(x0, y0), (x1, y0), (x1, y1), (x0, y1)]


def clip(poly, a, b, c):
    """Keep the part of ``poly`` where a*x + b*y <= c (Sutherland-Hodgman, one half-plane)."""
    out = []
    n = len(poly)
    for i in range(n):
        p, q = poly[i], poly[(i + 1) % n]
        fp = a * p[0] + b * p[1] - c
        fq = a * q[0] + b * q[1] - c
        if fp <= 0:
            out.append(p)
        if (fp < 0 < fq) or (fq < 0 < fp):
            t = fp / (fp - fq)
            out.append((p[0] + t * (q[0] - p[0]), p[1] + t * (q[1] - p[1])))
    return out


def clip_box(poly, x0=0.0, y0=0.0, x1=H, y1=H):
    poly = clip(poly, -1, 0, -x0)
    poly = clip(poly, 1, 0, x1)
    poly = clip(poly, 0, -1, -y0)
    return clip(poly, 0, 1, y1)


def band(p, q, width=S):
    """A long quadrilateral of perpendicular width ``width`` along the line p -> q (to be clipped)."""
    dx, dy = q[0] - p[0], q[1] - p[1]
    n = math.hypot(dx, dy)
    ux, uy = dx / n, dy / n
    nx, ny = -uy * width / 2, ux * width / 2
    a = (p[0] - BIG * ux, p[1] - BIG * uy)
    b = (q[0] + BIG * ux, q[1] + BIG * uy)
    return [(a[0] - nx, a[1] - ny), (b[0] - nx, b[1] - ny), (b[0] + nx, b[1] + ny), (a[0] + nx, a[1] + ny)]


def side_of(p, q, keep_left=True):
    """Half-plane (a, b, c) with a*x + b*y <= c meaning left of p -> q (or right)."""
    dx, dy = q[0] - p[0], q[1] - p[1]
    # left of p->q: cross((q-p), (r-p)) >= 0  <=>  dy*x - dx*y <= dy*p.x - dx*p.y
    a, b, c = dy, -dx, dy * p[0] - dx * p[1]
    return (a, b, c) if keep_left else (-a, -b, -c)


def offset_line(p, q, d):
    """The line p -> q moved by ``d`` to its left."""
    dx, dy = q[0] - p[0], q[1] - p[1]
    n = math.hypot(dx, dy)
    ox, oy = -dy / n * d, dx / n * d
    return (p[0] + ox, p[1] + oy), (q[0] + ox, q[1] + oy)


def arc(cx, cy, r_out, r_in, a0, a1, step=2.0):
    """Annular sector from angle a0 to a1 (degrees, counter-clockwise), as one CCW ring."""
    k = max(2, int(math.ceil(abs(a1 - a0) / step)) + 1)
    deg = {a0 + (a1 - a0) * i / (k - 1) for i in range(k)}
    deg |= {90.0 * j for j in range(-4, 9) if a0 < 90.0 * j < a1}  # keep the extremes exact
    angs = [math.radians(a) for a in sorted(deg)]
    outer = [(cx + r_out * math.cos(t), cy + r_out * math.sin(t)) for t in angs]
    inner = [(cx + r_in * math.cos(t), cy + r_in * math.sin(t)) for t in reversed(angs)]
    return outer + inner


def circle(cx, cy, r, step=2.0, ccw=True):
    k = int(round(360 / step))
    pts = [(cx + r * math.cos(2 * math.pi * i / k), cy + r * math.sin(2 * math.pi * i / k)) for i in range(k)]
    return pts if ccw else pts[::-1]


def landolt_ring(gap_deg=0.0):
    """Landolt C: ring of outer diameter 5, stroke 1, a parallel-sided gap of width 1 facing ``gap_deg``."""
    c, ro, ri = 2.5, 2.5, 1.5
    ao = math.degrees(math.asin(0.5 / ro))
    ai = math.degrees(math.asin(0.5 / ri))
    k = 181
    outer_deg = {ao + (360 - 2 * ao) * i / (k - 1) for i in range(k)}
    outer_deg |= {45.0 * j for j in range(1, 8)}  # the ring's extremes in every orientation
    outer = [math.radians(a) for a in sorted(outer_deg)]
    inner = [math.radians(360 - ai - (360 - 2 * ai) * i / (k - 1)) for i in range(k)]
    pts = [(ro * math.cos(t), ro * math.sin(t)) for t in outer] + [(ri * math.cos(t), ri * math.sin(t)) for t in inner]
    g = math.radians(gap_deg)
    cg, sg = math.cos(g), math.sin(g)
    return [[(c + cg * x - sg * y, c + sg * x + cg * y) for x, y in pts]]


def rotate90(rings, quarter_turns):
    out = []
    for ring in rings:
        pts = ring
        for _ in range(quarter_turns % 4):
            pts = [(H - y, x) for x, y in pts]  # +90 degrees about (2.5, 2.5)
        out.append(pts)
    return out


def mirror_y(rings):
    return [[(x, H - y) for x, y in reversed(ring)] for ring in rings]


def left_bar():
    return box(0, 0, S, H)


def right_bar():
    return box(H - S, 0, H, H)


def diag(p, q, **lim):
    return clip_box(band(p, q), **lim)


def glyph_C():
    return landolt_ring(0.0)


def glyph_D():
    return [left_bar(), box(1, 4, 2.5, 5), box(1, 0, 2.5, 1), arc(2.5, 2.5, 2.5, 1.5, -90, 90)]


def glyph_H():
    return [left_bar(), right_bar(), box(1, 2, 4, 3)]


def glyph_K():
    up = diag((1.0, 2.0), (4.5, 5.0), x0=1, y0=2.5)
    down = diag((1.0, 3.0), (4.5, 0.0), x0=1, y1=2.5)
    return [left_bar(), up, down]


def glyph_N():
    return [left_bar(), right_bar(), diag((1.0, 5.0), (4.0, 0.0), x0=1, x1=4)]


def glyph_O():
    return [circle(2.5, 2.5, 2.5), circle(2.5, 2.5, 1.5, ccw=False)]


def bowl_right(cy, x0=1.0, xc=3.5):
    return [box(x0, cy + 0.5, xc, cy + 1.5), box(x0, cy - 1.5, xc, cy - 0.5), arc(xc, cy, 1.5, 0.5, -90, 90)]


def glyph_R():
    leg = diag((2.5, 2.5), (4.5, 0.0), x0=1, y1=2)
    return [left_bar(), *bowl_right(3.5), leg]


def glyph_S():
    return [
        box(1.5, 4, 5, 5),
        arc(1.5, 3.5, 1.5, 0.5, 90, 270),
        box(1.5, 2, 3.5, 3),
        arc(3.5, 1.5, 1.5, 0.5, -90, 90),
        box(0, 0, 3.5, 1),
    ]


def glyph_V():
    return [diag((0.5, 5.0), (2.5, 0.0), x1=2.5), diag((4.5, 5.0), (2.5, 0.0), x0=2.5)]


def glyph_Z():
    return [box(0, 4, 5, 5), box(0, 0, 5, 1), diag((4.5, 4.0), (0.5, 1.0), y0=1, y1=4)]


def glyph_A():
    lp, lq = (2.5, 5.0), (0.5, 0.0)
    rp, rq = (2.5, 5.0), (4.5, 0.0)
    legs = []
    for lo, hi in ((0.0, 1.0), (2.0, 5.0)):
        legs.append(diag(lp, lq, x1=2.5, y0=lo, y1=hi))
        legs.append(diag(rp, rq, x0=2.5, y0=lo, y1=hi))
    # crossbar: between the two legs' outer edges, y in [1, 2]
    bar = clip_box(box(-BIG, 1, BIG, 2))
    a, b = offset_line(lq, lp, S / 2)  # left leg's outer (left) edge
    bar = clip(bar, *side_of(a, b, keep_left=False))
    a, b = offset_line(rq, rp, -S / 2)  # right leg's outer (right) edge
    bar = clip(bar, *side_of(a, b, keep_left=True))
    return legs + [bar]


def glyph_B():
    # two bowls sharing the middle bar; each arc is cut at y = 2.5 so they do not overlap
    pieces = [left_bar(), box(1, 4, 3.5, 5), box(1, 2, 3.5, 3), box(1, 0, 3.5, 1)]
    pieces.append(clip(arc(3.5, 3.5, 1.5, 0.5, -90, 90), 0, -1, -2.5))
    pieces.append(clip(arc(3.5, 1.5, 1.5, 0.5, -90, 90), 0, 1, 2.5))
    return pieces


def glyph_E():
    return [left_bar(), box(1, 4, 5, 5), box(1, 2, 4, 3), box(1, 0, 5, 1)]


def glyph_F():
    return [left_bar(), box(1, 4, 5, 5), box(1, 2, 4, 3)]


def glyph_G():
    return [arc(2.5, 2.5, 2.5, 1.5, 45, 360), box(2.5, 2.5, 5, 3.5)]


def glyph_I():
    return [box(1, 4, 4, 5), box(2, 1, 3, 4), box(1, 0, 4, 1)]


def glyph_J():
    return [box(4, 2.5, 5, 5), arc(2.5, 2.5, 2.5, 1.5, 180, 360)]


def glyph_L():
    return [left_bar(), box(1, 0, 5, 1)]


def glyph_M():
    return [
        left_bar(),
        right_bar(),
        diag((1.0, 5.0), (2.5, 1.5), x0=1, x1=2.5),
        diag((4.0, 5.0), (2.5, 1.5), x0=2.5, x1=4),
    ]


def glyph_P():
    return [left_bar(), *bowl_right(3.5)]


def glyph_Q():
    """O plus a tail along the -45 degree diagonal, drawn where it does not overlap the ring:
    inside the hole (a solid ring inside a hole: even-odd fills it) and outside the ring."""
    along = lambda lo, hi: [(1, -1, hi * math.sqrt(2)), (-1, 1, -lo * math.sqrt(2))]  # noqa: E731
    inner = diag((2.5, 2.5), (5.0, 0.0))
    for hp in along(0.5, math.sqrt(1.5**2 - 0.5**2)):  # projection on the diagonal, from the centre
        inner = clip(inner, hp[0], hp[1], hp[2])
    outer = diag((2.5, 2.5), (5.0, 0.0))
    outer = clip(outer, -1, 1, -2.5 * math.sqrt(2))  # beyond the tangent at -45 degrees
    return glyph_O() + [inner, outer]


def glyph_T():
    return [box(0, 4, 5, 5), box(2, 0, 3, 4)]


def glyph_U():
    return [box(0, 2.5, 1, 5), box(4, 2.5, 5, 5), arc(2.5, 2.5, 2.5, 1.5, 180, 360)]


def glyph_W():
    return mirror_y(glyph_M())


def glyph_X():
    p1, q1 = (0.5, 5.0), (4.5, 0.0)
    p2, q2 = (4.5, 5.0), (0.5, 0.0)
    first = diag(p1, q1)
    a, b = offset_line(p1, q1, S / 2)
    upper = clip(diag(p2, q2), *side_of(a, b, keep_left=True))
    a, b = offset_line(p1, q1, -S / 2)
    lower = clip(diag(p2, q2), *side_of(a, b, keep_left=False))
    return [first, upper, lower]


def glyph_Y():
    return [
        diag((0.5, 5.0), (2.5, 2.5), x1=2.5, y0=2.5),
        diag((4.5, 5.0), (2.5, 2.5), x0=2.5, y0=2.5),
        box(2, 0, 3, 2.5),
    ]


def ccw(ring):
    area = 0.5 * sum(
        ring[i][0] * ring[(i + 1) % len(ring)][1] - ring[(i + 1) % len(ring)][0] * ring[i][1] for i in range(len(ring))
    )
    return ring if area > 0 else ring[::-1]


def clean(rings, holes=()):
    out = []
    for i, ring in enumerate(rings):
        ring = ccw(ring)
        if i in holes:
            ring = ring[::-1]
        dedup = [ring[0]]
        for p in ring[1:]:
            if math.dist(p, dedup[-1]) > 1e-9:
                dedup.append(p)
        if math.dist(dedup[0], dedup[-1]) < 1e-9:
            dedup.pop()
        out.append([[round(x, 6), round(y, 6)] for x, y in dedup])
    return out


SLOAN = "CDHKNORSVZ"


def letter(ch):
    rings = globals()[f"glyph_{ch}"]()
    holes = {1} if ch in "OQ" else set()
    return clean(rings, holes)


def write(name, n_alt, glyphs, description):
    OUT.mkdir(parents=True, exist_ok=True)
    data = {
        "name": name,
        "n_alternatives": n_alt,
        "design_height": H,
        "description": description,
        "note": NOTE,
        "glyphs": glyphs,
    }
    (OUT / f"{name}.json").write_text(json.dumps(data, indent=1) + "\n")


def main():
    write("sloan", 10, {ch: letter(ch) for ch in SLOAN}, "The 10 Sloan letters C D H K N O R S V Z.")
    write(
        "letters26",
        26,
        {chr(c): letter(chr(c)) for c in range(ord("A"), ord("Z") + 1)},
        "A-Z drawn with the Sloan rules, for the 26-alternative task of Fauvel & Chalk (contextual BO), sec. 5. "
        "Equal legibility is by construction (same grid and stroke), not measured.",
    )
    e_right = [left_bar(), box(1, 4, 5, 5), box(1, 2, 5, 3), box(1, 0, 5, 1)]
    write(
        "tumbling_e",
        4,
        {name: clean(rotate90(e_right, k)) for k, name in enumerate(("right", "up", "left", "down"))},
        "Tumbling E; the glyph name is the direction the open side (the arms) faces.",
    )
    names = ("right", "up-right", "up", "up-left", "left", "down-left", "down", "down-right")
    write(
        "landolt_c",
        8,
        {name: clean(landolt_ring(45.0 * k)) for k, name in enumerate(names)},
        "Landolt C, outer diameter 5, stroke and gap 1 (ISO 8596); the glyph name is the direction the gap faces.",
    )


if __name__ == "__main__":
    main()
