/* The DSL's time functions. date_time(format, [unix time]) writes the time
 * (now, local) with %Y %M %D %H %m %S (two digits at least; %y %d %h %s the
 * same), or, when the format has no %, as a Go layout (02-01-2006 15:04).
 * unix_time([seconds]) is now plus seconds. to_unix_time(text, [layout])
 * reads a number, or a time in the given Go layout or else the DSL's default
 * layouts (RFC 3339, 2006-01-02 15:04:05 with or without seconds, time or
 * zone), UTC unless the text has a zone, as Go's time.Parse.
 * wait_for(seconds) sleeps, but at most what env.max_wait_ms allows over
 * one evaluation (nothing by default), and is true.
 *
 * Go layouts here: 2006 06 01 1 Jan January 02 2 _2 15 03 3 04 4 05 5 PM pm
 * Mon Monday MST, zones -0700 -07:00 -07 Z0700 Z07:00 Z07, and fractions
 * .000 or .999 (any count). */
#define _DEFAULT_SOURCE /* timegm, localtime_r */
#include "expr-int.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <time.h>

#define S(v) (v).u.str.ptr, (v).u.str.len

typedef enum chunk {
  C_LIT,
  C_YEAR,
  C_YEAR2,
  C_MON,
  C_MON2,
  C_MON_ABBR,
  C_MON_FULL,
  C_DAY,
  C_DAY2,
  C_DAY_SP,
  C_HOUR,
  C_HOUR12,
  C_HOUR12_2,
  C_MIN,
  C_MIN2,
  C_SEC,
  C_SEC2,
  C_PM,
  C_pm,
  C_WD_ABBR,
  C_WD_FULL,
  C_TZ_ABBR,
  C_ZONE,
  C_FRAC
} chunk;

typedef struct layout_tok {
  chunk kind;
  size_t len;   /* bytes of the layout */
  int zone_z;   /* C_ZONE: Z form (UTC as Z) */
  int zone_fmt; /* C_ZONE: 4 -0700, 5 -07:00, 2 -07 */
} layout_tok;

static const char *const months[] = {"January",   "February", "March",    "April",
                                     "May",       "June",     "July",     "August",
                                     "September", "October",  "November", "December"};
static const char *const days[] = {"Sunday",   "Monday", "Tuesday", "Wednesday",
                                   "Thursday", "Friday", "Saturday"};

static int starts(const char *s, size_t n, const char *p)
{
  size_t l = strlen(p);
  return n >= l && memcmp(s, p, l) == 0;
}

/* The layout chunk at s (Go's nextStdChunk for the chunks above). */
static layout_tok next_chunk(const char *s, size_t n)
{
  static const struct {
    const char *p;
    chunk k;
  } fixed[] = {{"January", C_MON_FULL},
               {"Jan", C_MON_ABBR},
               {"Monday", C_WD_FULL},
               {"Mon", C_WD_ABBR},
               {"MST", C_TZ_ABBR},
               {"2006", C_YEAR},
               {"01", C_MON2},
               {"02", C_DAY2},
               {"03", C_HOUR12_2},
               {"04", C_MIN2},
               {"05", C_SEC2},
               {"06", C_YEAR2},
               {"15", C_HOUR},
               {"1", C_MON},
               {"2", C_DAY},
               {"_2", C_DAY_SP},
               {"3", C_HOUR12},
               {"4", C_MIN},
               {"5", C_SEC},
               {"PM", C_PM},
               {"pm", C_pm}};
  static const struct {
    const char *p;
    int fmt;
  } zones[] = {{"-07:00", 5}, {"-0700", 4}, {"-07", 2}};
  for (int z = 0; z < 2; z++)
    for (size_t i = 0; i < 3; i++) {
      char p[8];
      snprintf(p, sizeof p, "%s%s", z ? "Z" : "-", zones[i].p + 1);
      if (starts(s, n, p))
        return (layout_tok){C_ZONE, strlen(p), z, zones[i].fmt};
    }
  if ((s[0] == '.' || s[0] == ',') && n > 1 && (s[1] == '0' || s[1] == '9')) {
    size_t k = 1;
    while (k < n && s[k] == s[1])
      k++;
    if (k == n || !(s[k] >= '0' && s[k] <= '9'))
      return (layout_tok){C_FRAC, k, 0, 0};
  }
  for (size_t i = 0; i < sizeof fixed / sizeof fixed[0]; i++)
    if (starts(s, n, fixed[i].p))
      return (layout_tok){fixed[i].k, strlen(fixed[i].p), 0, 0};
  return (layout_tok){C_LIT, 1, 0, 0};
}

/* ---- Formatting. */
static void fmt_zone(sbuf *b, const layout_tok *t, long off)
{
  if (t->zone_z && off == 0) {
    expr__sb_addc(b, 'Z');
    return;
  }
  long a = off < 0 ? -off : off;
  expr__sb_addf(b, "%c%02ld", off < 0 ? '-' : '+', a / 3600);
  if (t->zone_fmt == 5)
    expr__sb_addf(b, ":%02ld", a / 60 % 60);
  else if (t->zone_fmt == 4)
    expr__sb_addf(b, "%02ld", a / 60 % 60);
}

static void fmt_chunk(sbuf *b, const layout_tok *t, const char *lit, const struct tm *tm)
{
  int h12 = tm->tm_hour % 12 ? tm->tm_hour % 12 : 12;
  switch (t->kind) {
  case C_LIT: expr__sb_add(b, lit, t->len); break;
  case C_YEAR: expr__sb_addf(b, "%04d", tm->tm_year + 1900); break;
  case C_YEAR2: expr__sb_addf(b, "%02d", (tm->tm_year + 1900) % 100); break;
  case C_MON: expr__sb_addf(b, "%d", tm->tm_mon + 1); break;
  case C_MON2: expr__sb_addf(b, "%02d", tm->tm_mon + 1); break;
  case C_MON_ABBR: expr__sb_add(b, months[tm->tm_mon], 3); break;
  case C_MON_FULL: expr__sb_addf(b, "%s", months[tm->tm_mon]); break;
  case C_DAY: expr__sb_addf(b, "%d", tm->tm_mday); break;
  case C_DAY2: expr__sb_addf(b, "%02d", tm->tm_mday); break;
  case C_DAY_SP: expr__sb_addf(b, "%2d", tm->tm_mday); break;
  case C_HOUR: expr__sb_addf(b, "%02d", tm->tm_hour); break;
  case C_HOUR12: expr__sb_addf(b, "%d", h12); break;
  case C_HOUR12_2: expr__sb_addf(b, "%02d", h12); break;
  case C_MIN: expr__sb_addf(b, "%d", tm->tm_min); break;
  case C_MIN2: expr__sb_addf(b, "%02d", tm->tm_min); break;
  case C_SEC: expr__sb_addf(b, "%d", tm->tm_sec); break;
  case C_SEC2: expr__sb_addf(b, "%02d", tm->tm_sec); break;
  case C_PM: expr__sb_addf(b, "%s", tm->tm_hour >= 12 ? "PM" : "AM"); break;
  case C_pm: expr__sb_addf(b, "%s", tm->tm_hour >= 12 ? "pm" : "am"); break;
  case C_WD_ABBR: expr__sb_add(b, days[tm->tm_wday], 3); break;
  case C_WD_FULL: expr__sb_addf(b, "%s", days[tm->tm_wday]); break;
  case C_TZ_ABBR: expr__sb_addf(b, "%s", tm->tm_zone ? tm->tm_zone : "UTC"); break;
  case C_ZONE: fmt_zone(b, t, tm->tm_gmtoff); break;
  case C_FRAC: /* whole seconds: .000 prints zeros, .999 nothing */
    if (lit[1] == '0') {
      expr__sb_addc(b, lit[0]);
      for (size_t i = 1; i < t->len; i++)
        expr__sb_addc(b, '0');
    }
    break;
  }
}

static void fmt_layout(sbuf *b, const char *s, size_t n, const struct tm *tm)
{
  for (size_t i = 0; i < n && b->rc == EXPR_OK;) {
    layout_tok t = next_chunk(s + i, n - i);
    fmt_chunk(b, &t, s + i, tm);
    i += t.len;
  }
}

/* The DSL's %X format: each %X replaced by its field, two digits at least. */
static expr_code fmt_simple(expr_ctx *c, const char *s, size_t n, const struct tm *tm,
                            expr_value *out)
{
  sbuf b;
  expr__sb_init(&b, c);
  for (size_t i = 0; i < n; i++) {
    char f = i + 1 < n ? s[i + 1] : 0;
    if (s[i] != '%' || !((f >= 'a' && f <= 'z') || (f >= 'A' && f <= 'Z'))) {
      expr__sb_addc(&b, s[i]);
      continue;
    }
    int v = f == 'Y' || f == 'y'   ? tm->tm_year + 1900
            : f == 'M'             ? tm->tm_mon + 1
            : f == 'D' || f == 'd' ? tm->tm_mday
            : f == 'H' || f == 'h' ? tm->tm_hour
            : f == 'm'             ? tm->tm_min
            : f == 'S' || f == 's' ? tm->tm_sec
                                   : -1;
    if (v < 0) {
      sbuf drop = b;
      expr__sb_done(&drop, out);
      return expr__fail(c, EXPR_E_VALUE, "date_time: unknown format %%%c", f);
    }
    expr__sb_addf(&b, "%02d", v);
    i++;
  }
  return expr__sb_done(&b, out);
}

static int has_simple(const char *s, size_t n)
{
  for (size_t i = 0; i + 1 < n; i++) {
    char f = s[i + 1];
    if (s[i] == '%' && ((f >= 'a' && f <= 'z') || (f >= 'A' && f <= 'Z')))
      return 1;
  }
  return 0;
}

static expr_code fn_date_time(expr_ctx *c, const expr_value *a, size_t n, expr_value *out)
{
  expr_value f;
  expr_code rc = expr__str(c, &a[0], &f);
  if (rc != EXPR_OK)
    return rc;
  time_t t = time(NULL);
  if (n > 1) {
    long long v;
    if (!(a[1].type == EXPR_STR ? expr__atoi(&a[1], &v) : expr__to_int(&a[1], &v)))
      return expr__fail(c, EXPR_E_VALUE, "date_time: bad unix time");
    t = (time_t)v;
  }
  struct tm tm;
  if (!localtime_r(&t, &tm))
    return expr__fail(c, EXPR_E_VALUE, "date_time: time out of range");
  if (has_simple(S(f)))
    return fmt_simple(c, S(f), &tm, out);
  sbuf b;
  expr__sb_init(&b, c);
  fmt_layout(&b, S(f), &tm);
  return expr__sb_done(&b, out);
}

static expr_code fn_unix_time(expr_ctx *c, const expr_value *a, size_t n, expr_value *out)
{
  long long add = 0;
  expr_code rc = n ? expr__int(c, &a[0], &add, "unix_time: bad seconds") : EXPR_OK;
  if (rc != EXPR_OK)
    return rc;
  *out = expr_num((double)time(NULL) + (double)add);
  return EXPR_OK;
}

/* ---- Parsing. */
typedef struct parsed {
  int year, mon, day, hour, min, sec, pm, has_pm;
  long off;
} parsed;

/* Digits at s: exactly want of them, or 1 to want when want < 0. */
static size_t num(const char *s, size_t n, int want, int *out)
{
  size_t max = want < 0 ? (size_t)-want : (size_t)want, k = 0;
  int v = 0;
  while (k < n && k < max && s[k] >= '0' && s[k] <= '9')
    v = v * 10 + (s[k++] - '0');
  if (k == 0 || (want > 0 && k != max))
    return 0;
  *out = v;
  return k;
}

static size_t name_of(const char *s, size_t n, const char *const *names, int count, int abbr,
                      int *out)
{
  for (int i = 0; i < count; i++) {
    size_t l = abbr ? 3 : strlen(names[i]);
    if (n >= l && strncasecmp(s, names[i], l) == 0) {
      *out = i;
      return l;
    }
  }
  return 0;
}

static size_t parse_zone(const char *s, size_t n, const layout_tok *t, long *off)
{
  int h, m = 0;
  if (t->zone_z && n && s[0] == 'Z') {
    *off = 0;
    return 1;
  }
  if (!n || (s[0] != '+' && s[0] != '-') || !num(s + 1, n - 1, 2, &h))
    return 0;
  size_t k = 3;
  if (t->zone_fmt == 5 && !(k < n && s[k] == ':' && num(s + k + 1, n - k - 1, 2, &m)))
    return 0;
  if (t->zone_fmt == 5)
    k += 3;
  if (t->zone_fmt == 4 && !num(s + k, n - k, 2, &m))
    return 0;
  if (t->zone_fmt == 4)
    k += 2;
  *off = (s[0] == '-' ? -1L : 1L) * (h * 3600L + m * 60L);
  return k;
}

static size_t parse_chunk(const char *s, size_t n, const layout_tok *t, const char *lit, parsed *p)
{
  int v = 0;
  size_t k;
  switch (t->kind) {
  case C_LIT: return n >= t->len && memcmp(s, lit, t->len) == 0 ? t->len : 0;
  case C_YEAR: return num(s, n, 4, &p->year);
  case C_YEAR2:
    k = num(s, n, 2, &v);
    p->year = v >= 69 ? 1900 + v : 2000 + v;
    return k;
  case C_MON: return num(s, n, -2, &p->mon);
  case C_MON2: return num(s, n, 2, &p->mon);
  case C_MON_ABBR:
  case C_MON_FULL:
    k = name_of(s, n, months, 12, t->kind == C_MON_ABBR, &v);
    p->mon = v + 1;
    return k;
  case C_DAY: return num(s, n, -2, &p->day);
  case C_DAY2: return num(s, n, 2, &p->day);
  case C_DAY_SP:
    return n && s[0] == ' ' ? 1 + num(s + 1, n - 1, 1, &p->day) : num(s, n, 2, &p->day);
  case C_HOUR: return num(s, n, 2, &p->hour);
  case C_HOUR12: return num(s, n, -2, &p->hour);
  case C_HOUR12_2: return num(s, n, 2, &p->hour);
  case C_MIN: return num(s, n, -2, &p->min);
  case C_MIN2: return num(s, n, 2, &p->min);
  case C_SEC: return num(s, n, -2, &p->sec);
  case C_SEC2: return num(s, n, 2, &p->sec);
  case C_PM:
  case C_pm:
    if (n < 2 || (s[1] | 0x20) != 'm' || ((s[0] | 0x20) != 'a' && (s[0] | 0x20) != 'p'))
      return 0;
    p->has_pm = 1;
    p->pm = (s[0] | 0x20) == 'p';
    return 2;
  case C_WD_ABBR:
  case C_WD_FULL: return name_of(s, n, days, 7, t->kind == C_WD_ABBR, &v);
  case C_TZ_ABBR:
    for (k = 0; k < n && s[k] >= 'A' && s[k] <= 'Z'; k++)
      ;
    return k >= 3 ? k : 0;
  case C_ZONE: return parse_zone(s, n, t, &p->off);
  case C_FRAC:
    if (!n || s[0] != lit[0])
      return lit[1] == '9' ? (size_t)-1 : 0; /* .999 may be absent */
    for (k = 1; k < n && s[k] >= '0' && s[k] <= '9'; k++)
      ;
    return k > 1 ? k : 0;
  }
  return 0;
}

/* s in layout l: the Unix time, or 0 when it does not fit. */
static int parse_layout(const char *l, size_t ln, const char *s, size_t n, long long *out)
{
  parsed p = {.year = 0, .mon = 1, .day = 1};
  size_t i = 0, j = 0;
  while (i < ln) {
    layout_tok t = next_chunk(l + i, ln - i);
    size_t k = parse_chunk(s + j, n - j, &t, l + i, &p);
    if (k == (size_t)-1)
      k = 0;
    else if (k == 0)
      return 0;
    i += t.len;
    j += k;
  }
  if (j != n)
    return 0;
  if (p.has_pm && p.hour > 0 && p.hour <= 12)
    p.hour = p.hour % 12 + (p.pm ? 12 : 0);
  if (p.mon < 1 || p.mon > 12 || p.day < 1 || p.day > 31 || p.hour > 23 || p.min > 59 || p.sec > 59)
    return 0;
  struct tm tm = {.tm_year = p.year - 1900,
                  .tm_mon = p.mon - 1,
                  .tm_mday = p.day,
                  .tm_hour = p.hour,
                  .tm_min = p.min,
                  .tm_sec = p.sec};
  *out = (long long)timegm(&tm) - p.off;
  return 1;
}

static expr_code fn_to_unix_time(expr_ctx *c, const expr_value *a, size_t n, expr_value *out)
{
  static const char *const defaults[] = {"2006-01-02T15:04:05Z07:00",
                                         "2006-01-02 15:04:05 Z07:00",
                                         "2006-01-02 15:04:05",
                                         "2006-01-02 15:04 Z07:00",
                                         "2006-01-02 15:04",
                                         "2006-01-02 Z07:00",
                                         "2006-01-02"};
  expr_value s[2];
  expr_code rc = expr__strs(c, a, n, s);
  if (rc != EXPR_OK)
    return rc;
  double d;
  if (expr__parse_double(S(s[0]), &d)) {
    *out = expr_num(trunc(d));
    return EXPR_OK;
  }
  long long t;
  int ok = 0;
  if (n == 2)
    ok = parse_layout(S(s[1]), S(s[0]), &t);
  for (size_t i = 0; n == 1 && !ok && i < sizeof defaults / sizeof defaults[0]; i++)
    ok = parse_layout(defaults[i], strlen(defaults[i]), S(s[0]), &t);
  if (!ok)
    return expr__fail(c, EXPR_E_VALUE, "to_unix_time: not a time in the layout");
  *out = expr_num((double)t);
  return EXPR_OK;
}

static expr_code fn_wait_for(expr_ctx *c, const expr_value *a, size_t n, expr_value *out)
{
  (void)n;
  long long s;
  if (expr__int(c, a, &s, "wait_for: bad seconds") != EXPR_OK)
    return c->err->code;
  unsigned left = c->env->max_wait_ms - c->waited_ms;
  unsigned ms = s <= 0 ? 0 : (unsigned long long)s > left / 1000 ? left : (unsigned)s * 1000;
  if (ms) {
    struct timespec ts = {ms / 1000, (long)(ms % 1000) * 1000000L};
    while (nanosleep(&ts, &ts) != 0)
      ;
    c->waited_ms += ms;
  }
  *out = expr_bool(1);
  return EXPR_OK;
}

const expr_fn expr__fn_time[] = {
    {"date_time", 1, 2, fn_date_time, 0},
    {"unix_time", 0, 1, fn_unix_time, 0},
    {"to_unix_time", 1, 2, fn_to_unix_time, 0},
    {"wait_for", 1, 1, fn_wait_for, 0},
    {NULL, 0, 0, NULL, 0},
};
