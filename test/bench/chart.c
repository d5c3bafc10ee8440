/* The burst chart: resident memory of every contender over its run, as an
 * SVG line chart. */
#include "bench.h"

#include <math.h>

static const char *const COLORS[NCONT] = {
    [K_DISCARD] = "#7f7f7f",  [K_ONECOPY] = "#2ca02c", [K_RC] = "#1f77b4",
    [K_RCB] = "#17becf",      [K_RCS] = "#9467bd",     [K_GIM] = "#d62728",
    [K_DOUBLING] = "#ff7f0e", [K_SCAN] = "#8c564b",    [K_SCANM] = "#e377c2"};

/* Page geometry, and the plotted ranges (RSS below the start is drawn at
 * 0). */
typedef struct frame {
  double W, H, L, R, T, B; /* size and margins */
  double pw, ph;           /* plot area */
  double tmax, ymin, ymax, xs, ys;
} frame;

static double nice_step(double range, int ticks)
{
  double raw = range / ticks, mag = pow(10, floor(log10(raw))), f = raw / mag;
  return (f <= 1 ? 1 : f <= 2 ? 2 : f <= 5 ? 5 : 10) * mag;
}

static double px(const frame *g, double v) { return g->L + v / g->tmax * g->pw; }

static double py(const frame *g, double v)
{
  return g->T + g->ph - (v - g->ymin) / (g->ymax - g->ymin) * g->ph;
}

/* The time and memory ranges of every series of scenario si. */
static bool frame_fit(frame *g, size_t si)
{
  *g = (frame){.W = 1000, .H = 540, .L = 80, .R = 290, .T = 50, .B = 60};
  for (int k = 0; k < NCONT; k++) {
    const tally *t = &results[si][k];
    for (size_t i = 0; t->ran && i < t->nseries; i++) {
      g->tmax = t->series[i].t - t->setup_s > g->tmax ? t->series[i].t - t->setup_s : g->tmax;
      g->ymax = t->series[i].mib > g->ymax ? t->series[i].mib : g->ymax;
    }
  }
  if (g->tmax <= 0 || g->ymax <= g->ymin)
    return false;
  g->xs = nice_step(g->tmax, 10);
  g->ys = nice_step(g->ymax - g->ymin, 8);
  g->tmax = ceil(g->tmax / g->xs) * g->xs;
  g->ymax = ceil(g->ymax / g->ys) * g->ys;
  g->pw = g->W - g->L - g->R;
  g->ph = g->H - g->T - g->B;
  return true;
}

/* Title, grid, axes and their labels. */
static void svg_axes(FILE *f, const frame *g, const scenario *sc)
{
  fprintf(f,
          "<svg xmlns=\"http://www.w3.org/2000/svg\" width=\"%.0f\" height=\"%.0f\" "
          "font-family=\"sans-serif\" font-size=\"12\">\n",
          g->W, g->H);
  fprintf(f, "<rect width=\"100%%\" height=\"100%%\" fill=\"white\"/>\n");
  fprintf(f,
          "<text x=\"%.0f\" y=\"24\" font-size=\"15\">%s: %zu x %.3g MiB at %ld "
          "concurrent: resident memory above each contender's start</text>\n",
          g->L, sc->name, sc->count, mib((double)sc->size), sc->conc);
  for (double v = 0; v <= g->tmax + g->xs / 2; v += g->xs) {
    fprintf(f, "<line x1=\"%.1f\" y1=\"%.1f\" x2=\"%.1f\" y2=\"%.1f\" stroke=\"#e0e0e0\"/>\n",
            px(g, v), g->T, px(g, v), g->T + g->ph);
    fprintf(f, "<text x=\"%.1f\" y=\"%.1f\" text-anchor=\"middle\">%g</text>\n", px(g, v),
            g->T + g->ph + 18, v);
  }
  for (double v = g->ymin; v <= g->ymax + g->ys / 2; v += g->ys) {
    fprintf(f, "<line x1=\"%.1f\" y1=\"%.1f\" x2=\"%.1f\" y2=\"%.1f\" stroke=\"#e0e0e0\"/>\n", g->L,
            py(g, v), g->L + g->pw, py(g, v));
    fprintf(f, "<text x=\"%.1f\" y=\"%.1f\" text-anchor=\"end\">%g</text>\n", g->L - 6,
            py(g, v) + 4, v);
  }
  fprintf(f, "<line x1=\"%.1f\" y1=\"%.1f\" x2=\"%.1f\" y2=\"%.1f\" stroke=\"black\"/>\n", g->L,
          g->T + g->ph, g->L + g->pw, g->T + g->ph);
  fprintf(f, "<line x1=\"%.1f\" y1=\"%.1f\" x2=\"%.1f\" y2=\"%.1f\" stroke=\"black\"/>\n", g->L,
          g->T, g->L, g->T + g->ph);
  fprintf(f,
          "<text x=\"%.1f\" y=\"%.1f\" text-anchor=\"middle\">seconds since the "
          "contender's clock started (after its setup; sampled every 10 ms)</text>\n",
          g->L + g->pw / 2, g->H - 15);
  fprintf(f,
          "<text transform=\"translate(20 %.1f) rotate(-90)\" text-anchor=\"middle\">"
          "resident memory above start (MiB)</text>\n",
          g->T + g->ph / 2);
}

/* One contender's line, and its legend entry (the li-th). */
static void svg_series(FILE *f, const frame *g, int k, const tally *t, int li)
{
  fprintf(f, "<polyline fill=\"none\" stroke=\"%s\" stroke-width=\"1.5\" points=\"", COLORS[k]);
  /* The clock starts after setup: one-copy's buffers are resident at 0. */
  bool first = true;
  for (size_t i = 0; i < t->nseries; i++) {
    double x = t->series[i].t - t->setup_s;
    if (i + 1 < t->nseries && t->series[i + 1].t - t->setup_s <= 0)
      continue;
    fprintf(f, "%s%.1f,%.1f", first ? "" : " ", px(g, x > 0 ? x : 0),
            py(g, t->series[i].mib > 0 ? t->series[i].mib : 0));
    first = false;
  }
  fprintf(f, "\"/>\n");
  double ly = g->T + 10 + 22 * li, lx = g->L + g->pw;
  fprintf(f,
          "<line x1=\"%.1f\" y1=\"%.1f\" x2=\"%.1f\" y2=\"%.1f\" stroke=\"%s\" "
          "stroke-width=\"3\"/>\n",
          lx + 15, ly, lx + 40, ly, COLORS[k]);
  fprintf(f, "<text x=\"%.1f\" y=\"%.1f\">%s: peak +%.0f MiB, %.2f s</text>\n", lx + 46, ly + 4,
          CONTENDERS[k].name, signed_mib(t->peak, t->rss0), t->wall);
}

bool write_svg(const char *path, size_t si)
{
  frame g;
  if (!frame_fit(&g, si))
    return false;
  FILE *f = fopen(path, "w");
  if (!f)
    return false;
  svg_axes(f, &g, &SCENARIOS[si]);
  int li = 0;
  for (int k = 0; k < NCONT; k++) {
    const tally *t = &results[si][k];
    if (t->ran && t->nseries)
      svg_series(f, &g, k, t, li++);
  }
  fprintf(f, "</svg>\n");
  return fclose(f) == 0;
}
