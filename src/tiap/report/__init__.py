"""What every report shares: number formats, SVG primitives, the palette, figure
sizing, Markdown and HTML writers and the HTML page shell.

The reports themselves (rescore, agreement, the audit's index) keep only their
models and the choice and assembly of their figures and tables; how a number is
written, how a figure is drawn and how a table reaches Markdown or HTML is here,
once. Text from data goes through :mod:`tiap.text` (the inert-text functions)
wherever it is shown.

- :mod:`tiap.report.numbers`: numbers, shares, signed differences and intervals
  as every report writes them (one format; missing values as ``n/a``);
- :mod:`tiap.report.palette`: the colours of series, axes, grids and what is
  undefined, and colour ramps for heatmaps;
- :mod:`tiap.report.sizing`: how wide a label is drawn, so figures fit their labels;
- :mod:`tiap.report.svg`: SVG primitives (root element, text, shapes, ticks, legend);
- :mod:`tiap.report.charts`: charts drawn from plain rows (interval rows, grouped and
  stacked bars);
- :mod:`tiap.report.blocks`: a report as blocks (headings, paragraphs, tables,
  lists, links, figures), with data text marked as such;
- :mod:`tiap.report.markdown` and :mod:`tiap.report.html`: the blocks written as
  Markdown and as HTML;
- :mod:`tiap.report.page`: the self-contained HTML page around them.

This package is a leaf beside :mod:`tiap.rubric` and :mod:`tiap.stats`: it
imports nothing from the other parts of tiap but :mod:`tiap.text`.
"""
