"""Fast PNG frames for the chapter widgets: draw what never changes once, then only what moves.

A widget's figure is made once (axes, labels, legends); a control change moves lines, bars and tick
labels. :class:`Frames` draws the unchanging parts once into a background (one per ``key``, e.g.
"the choice is possible" vs "only a message"), and for each frame restores that background and draws
the ``dynamic`` artists on top of it, then encodes the pixels as a PNG (fast zlib level). The
picture is the one ``savefig`` would give, minus a layout pass that nothing needs. No math here.
"""

from __future__ import annotations

import io
from collections.abc import Hashable, Iterable

from matplotlib.artist import Artist
from matplotlib.backends.backend_agg import FigureCanvasAgg
from matplotlib.figure import Figure


class Frames:
    """PNG frames of ``fig`` at ``dpi`` dots per inch, redrawing only the ``dynamic`` artists.

    Parameters
    ----------
    fig : the figure, its artists already made.
    dynamic : the artists that change from frame to frame (lines, bars, axes' ``xaxis``/``yaxis``
        when their limits move, texts that change), drawn in this order on every frame; an artist
        that is not visible is skipped.
    dpi : dots per inch of the frames.
    """

    def __init__(self, fig: Figure, dynamic: Iterable[Artist], dpi: float) -> None:
        self.fig = fig
        fig.set_dpi(dpi)
        self.canvas = FigureCanvasAgg(fig)
        self.dynamic = list(dynamic)
        for artist in self.dynamic:
            artist.set_animated(True)  # left out of canvas.draw(): the background
        self._backgrounds: dict = {}

    @property
    def width_px(self) -> int:
        """Width of a frame, pixels (show it at this width: a stretched PNG blurs its text)."""
        return int(self.canvas.get_width_height()[0])

    def png(self, key: Hashable = None) -> bytes:
        """One frame as PNG bytes; ``key`` names the background (draw it once per distinct key,
        after setting the visibility of the unchanging artists for that key)."""
        background = self._backgrounds.get(key)
        if background is None:
            self.canvas.draw()
            background = self._backgrounds[key] = self.canvas.copy_from_bbox(self.fig.bbox)
        else:
            self.canvas.restore_region(background)
        for artist in self.dynamic:
            if artist.get_visible():
                self.fig.draw_artist(artist)
        from PIL import Image

        width, height = self.canvas.get_width_height()
        image = Image.frombuffer("RGBA", (width, height), self.canvas.buffer_rgba(), "raw", "RGBA",
                                 0, 1)
        out = io.BytesIO()
        image.save(out, format="png", compress_level=1)
        return out.getvalue()
