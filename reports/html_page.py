"""A self-contained HTML page: inline CSS, no scripts, images next to it."""
import html

CSS = """
body { font-family: sans-serif; max-width: 1200px; margin: 2em auto; padding: 0 1em; color: #222; }
h1 { border-bottom: 2px solid #444; }
h2 { margin-top: 2em; border-bottom: 1px solid #ccc; }
figure { margin: 1em 0; }
figure img { max-width: 100%; border: 1px solid #ddd; }
figcaption { font-size: 0.9em; color: #555; }
table { border-collapse: collapse; font-size: 0.85em; margin: 1em 0; }
th, td { border: 1px solid #ccc; padding: 0.2em 0.5em; text-align: right; }
th { background: #f0f0f0; }
td:first-child, th:first-child { text-align: left; }
.note { background: #fff6d5; border-left: 4px solid #e0b000; padding: 0.5em 1em; }
.failed { color: #b00; }
code { background: #f4f4f4; padding: 0 0.2em; }
"""


class Page:
    def __init__(self, title):
        self.title = title
        self.parts = []

    def h2(self, text, anchor):
        self.parts.append('<h2 id="%s">%s</h2>' % (anchor, html.escape(text)))

    def p(self, text, cls=None):
        c = ' class="%s"' % cls if cls else ""
        self.parts.append("<p%s>%s</p>" % (c, html.escape(text)))

    def raw(self, markup):
        self.parts.append(markup)

    def figure(self, plot):
        self.parts.append('<figure><img src="%s" alt="%s"><figcaption><b>%s.</b> %s</figcaption></figure>'
                          % (html.escape(plot.file), html.escape(plot.title), html.escape(plot.title),
                             html.escape(plot.caption)))

    def table(self, header, rows, row_classes=None):
        out = ["<table><tr>" + "".join("<th>%s</th>" % html.escape(str(h)) for h in header) + "</tr>"]
        for i, r in enumerate(rows):
            cls = row_classes[i] if row_classes else ""
            out.append('<tr%s>' % (' class="%s"' % cls if cls else "")
                       + "".join("<td>%s</td>" % html.escape(str(c)) for c in r) + "</tr>")
        self.parts.append("\n".join(out) + "</table>")

    def render(self, toc):
        links = " | ".join('<a href="#%s">%s</a>' % (a, html.escape(t)) for a, t in toc)
        return ("<!DOCTYPE html>\n<html lang=\"en\"><head><meta charset=\"utf-8\"><title>%s</title>"
                "<style>%s</style></head><body>\n<h1>%s</h1>\n<p>%s</p>\n%s\n</body></html>\n"
                % (html.escape(self.title), CSS, html.escape(self.title), links, "\n".join(self.parts)))
