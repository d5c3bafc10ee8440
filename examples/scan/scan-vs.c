/* scan's streaming engine: Vectorscan runs the --word and --regex
 * matchers of the body over each body as it arrives, in the body observer
 * (a stream per transfer: matches that straddle the slices curl delivers
 * are found, and the body need not be kept); what it does not take runs
 * over the body kept whole (scan-match.c).
 *
 * This is the only file that knows whether the build has Vectorscan: with
 * SCAN_HAVE_VECTORSCAN=1 (meson defines it where libhs is found) the
 * engine, else the few functions that say there is none. */
#include "scan.h"

#include <stdlib.h>
#include <string.h>

#if defined(SCAN_HAVE_VECTORSCAN) && SCAN_HAVE_VECTORSCAN
#include <ctype.h>
#include <hs.h>
#include <limits.h>

/* Narrowing. A matcher that has hit has nothing more to say about the body, yet a
 * database keeps paying for it: its literals are still found and checked
 * at every occurrence. So a stream narrows: once the matchers still
 * without a hit all have a bounded width (the longest match they can
 * have; a matcher anchored at the start counts as unbounded), the stream
 * is closed and one of a database of those alone takes over, first fed
 * the last width - 1 bytes the old one saw, so that no match ending past
 * the switch is missed. None can end in those replayed bytes: the old
 * stream would have reported it. Narrowed databases are compiled when
 * first wanted and kept, at most NARROW_DBS of them, so that compiling
 * stays a bounded cost of the whole scan. */
#define NARROW_DBS   16
#define NARROW_WIDTH 4096 /* the widest match narrowing replays for */

/* The engine's own part of the engine. */
struct vs_engine {
  hs_database_t *db; /* all streamed matchers; NULL: nothing streams */
  hs_scratch_t *scratch;
  char **exprs;     /* per matcher id: its Vectorscan expression, or NULL */
  unsigned *width;  /* per matcher id: its widest match, UINT_MAX if unbounded */
  struct narrowed { /* a database of the matchers left[id] */
    unsigned char *left;
    hs_database_t *db; /* NULL: it did not compile */
  } narrow[NARROW_DBS];
  size_t nnarrow;
};

/* A slot's stream. */
struct vs_stream {
  hs_stream_t *stream; /* from the body's first slice (or a narrowing) to the target's end */
  int stream_over;     /* nothing more to learn from it: no more scanning */
  size_t undecided;    /* streamed matchers without a hit */
  size_t stream_base;  /* the body offset of the stream's first byte */
  size_t body_seen;    /* bytes of this hop's body observed */
  int narrow_due;      /* a streamed matcher hit since the stream opened */
  char *tail;          /* NARROW_WIDTH bytes: the last ones seen, while a */
  size_t tail_len;     /* narrowing waits for enough of them to replay */
};

const char *engine_name(void)
{
  static char name[64];
  snprintf(name, sizeof name, "Vectorscan %.*s", (int)strcspn(hs_version(), " "), hs_version());
  return name;
}

void engine_usage(FILE *out)
{
  fprintf(out,
          "Engine: %s. It runs --word and --regex over the body as it\n"
          "arrives (the body is then not kept); a regex it cannot take (a back\n"
          "reference, a GNU escape other than \\w \\W \\s \\S) runs with regexec over\n"
          "the body kept whole, with the same meaning.\n",
          engine_name());
}

/* ---- POSIX EREs in Vectorscan's syntax ----------------------------------- */

/* An ERE rewritten for Vectorscan, whose syntax is PCRE's, with the same
 * meaning: every literal byte as \xHH, brackets as byte sets, '.' as any
 * byte but NUL (as regcomp's), $ as \z (PCRE's $ also matches before a
 * final newline), groups as (?:...), every quantified atom grouped (so
 * that "a*?" and "a*+" keep ERE's meaning, not PCRE's lazy and possessive
 * ones), intervals written out ({,n} is {0,n}). What has no such
 * translation fails it, and the regex is matched with regexec: back
 * references, GNU escapes other than \w \W \s \S. */
typedef struct ere_out {
  const char *p; /* the next byte of the ERE */
  int depth;     /* open groups */
  int fail;      /* no translation, or out of memory */
  line out;      /* the translation so far */
} ere_out;

static void ere_put(ere_out *e, const char *s)
{
  if (!e->fail)
    puts_line(&e->out, s);
  e->fail |= e->out.nomem;
}

static void ere_byte(ere_out *e, unsigned c)
{
  char hex[8];
  snprintf(hex, sizeof hex, "\\x%02x", c & 0xFF);
  ere_put(e, hex);
}

/* A byte set as a PCRE class of ranges; an empty one fails. */
static void ere_set(ere_out *e, const unsigned char set[32])
{
  int any = 0;
  ere_put(e, "[");
  for (int c = 0; c < 256;) {
    if (!(set[c >> 3] & (1u << (c & 7)))) {
      c++;
      continue;
    }
    int hi = c;
    while (hi < 255 && set[(hi + 1) >> 3] & (1u << ((hi + 1) & 7)))
      hi++;
    ere_byte(e, (unsigned)c);
    if (hi > c) {
      ere_put(e, "-");
      ere_byte(e, (unsigned)hi);
    }
    any = 1;
    c = hi + 1;
  }
  ere_put(e, "]");
  e->fail |= !any;
}

/* The set of \w (ctype 0) or \s (1), complemented for \W and \S. */
static void ere_escape_set(ere_out *e, int space, int negate)
{
  unsigned char set[32] = {0};
  for (int c = 0; c < 256; c++)
    if (space ? isspace(c) != 0 : isalnum(c) || c == '_')
      set[c >> 3] |= (unsigned char)(1u << (c & 7));
  if (negate)
    for (int i = 0; i < 32; i++)
      set[i] = (unsigned char)~set[i];
  ere_set(e, set);
}

static void ere_alternatives(ere_out *e);

/* One atom at e->p. Returns 1 when it may take a quantifier, 0 for an
 * anchor (regcomp refuses "^*"). */
static int ere_atom(ere_out *e)
{
  unsigned char c = (unsigned char)*e->p++;
  unsigned char set[32];
  switch (c) {
  case '(':
    e->depth++;
    ere_put(e, "(?:");
    ere_alternatives(e);
    if (*e->p != ')')
      e->fail = 1;
    else
      e->p++;
    ere_put(e, ")");
    e->depth--;
    return 1;
  case '.': ere_put(e, "[\\x01-\\xff]"); return 1;
  case '^': ere_put(e, "^"); return 0;
  case '$': ere_put(e, "\\z"); return 0;
  case '[':
    if (ere_bracket(&e->p, set) != 0)
      e->fail = 1;
    else
      ere_set(e, set);
    return 1;
  case '*':
  case '+':
  case '?':
  case '{': e->fail = 1; return 1; /* nothing to repeat */
  case '\\':
    c = (unsigned char)*e->p++;
    if (c == 'w' || c == 'W' || c == 's' || c == 'S')
      ere_escape_set(e, c == 's' || c == 'S', c == 'W' || c == 'S');
    else if (!c || strchr("bB<>`'123456789", c))
      e->fail = 1;
    else
      ere_byte(e, c); /* "\." and the like, and glibc's "\n" (an n) */
    return 1;
  default: ere_byte(e, c); return 1;
  }
}

/* A quantifier at e->p into q (room for 32); 0, or -1 when there is none
 * (or an interval regcomp would not take). */
static int ere_quantifier(ere_out *e, char *q)
{
  char c = *e->p;
  if (c == '*' || c == '+' || c == '?') {
    q[0] = c;
    q[1] = '\0';
    e->p++;
    return 0;
  }
  if (c != '{')
    return -1;
  const char *p = e->p + 1;
  long lo = 0, hi = -1;
  char *end;
  if (*p >= '0' && *p <= '9')
    lo = strtol(p, &end, 10), p = end;
  if (*p == ',') {
    p++;
    if (*p >= '0' && *p <= '9')
      hi = strtol(p, &end, 10), p = end;
  } else if (p == e->p + 1) {
    return -1; /* "{}" */
  } else {
    hi = lo;
  }
  if (*p != '}' || lo > 32767 || hi > 32767 || (hi >= 0 && hi < lo))
    return -1;
  e->p = p + 1;
  if (hi < 0)
    snprintf(q, 32, "{%ld,}", lo);
  else
    snprintf(q, 32, "{%ld,%ld}", lo, hi);
  return 0;
}

/* Atoms and their quantifiers until '|', the group's ')' or the end. */
static void ere_branch(ere_out *e)
{
  while (!e->fail && *e->p && *e->p != '|' && !(*e->p == ')' && e->depth > 0)) {
    size_t start = e->out.len;
    int repeatable = ere_atom(e);
    char q[32];
    while (!e->fail && (*e->p == '*' || *e->p == '+' || *e->p == '?' || *e->p == '{')) {
      if (!repeatable || ere_quantifier(e, q) != 0) {
        e->fail = 1;
        break;
      }
      /* (?:atom) then the quantifier: each one applies to what came
       * before, as in ERE. */
      ere_put(e, ")");
      ere_put(e, q);
      ere_put(e, "(?:"); /* room, then moved into place */
      if (!e->fail) {
        memmove(e->out.p + start + 3, e->out.p + start, e->out.len - 3 - start);
        memcpy(e->out.p + start, "(?:", 3);
      }
    }
  }
}

static void ere_alternatives(ere_out *e)
{
  ere_branch(e);
  while (!e->fail && *e->p == '|') {
    e->p++;
    ere_put(e, "|");
    ere_branch(e);
  }
}

/* ere in Vectorscan's syntax, malloc'd; NULL when it has no translation. */
static char *ere_translate(const char *ere)
{
  ere_out e = {.p = ere};
  ere_put(&e, "");
  ere_alternatives(&e);
  if (e.fail || *e.p) {
    free(e.out.p);
    return NULL;
  }
  return e.out.p;
}

/* ---- Databases ----------------------------------------------------------- */

/* DOTALL only matters for a '.' the translation has not replaced; no
 * MULTILINE: ^ and $ anchor at the body's ends. SINGLEMATCH: the first
 * match of each is all that is reported. */
#define STREAM_FLAGS (HS_FLAG_DOTALL | HS_FLAG_SINGLEMATCH)

/* A database of the matchers take[id] (each with an expression), or
 * NULL with *bad the index among them of one Vectorscan rejects (-1: the
 * set as a whole, or out of memory). */
static hs_database_t *engine_db(const struct vs_engine *g, size_t n, const unsigned char *take, int *bad)
{
  const char **exprs = calloc(n + 1, sizeof *exprs);
  unsigned *flags = calloc(n + 1, sizeof *flags), *ids = calloc(n + 1, sizeof *ids);
  hs_database_t *db = NULL;
  unsigned k = 0;
  *bad = -1;
  if (exprs && flags && ids) {
    for (size_t id = 0; id < n; id++)
      if (take[id]) {
        exprs[k] = g->exprs[id];
        flags[k] = STREAM_FLAGS;
        ids[k++] = (unsigned)id;
      }
    hs_compile_error_t *err = NULL;
    if (hs_compile_multi(exprs, flags, ids, k, HS_MODE_STREAM, NULL, &db, &err) != HS_SUCCESS) {
      db = NULL;
      if (err && err->expression >= 0 && (unsigned)err->expression < k)
        *bad = (int)ids[err->expression];
      hs_free_compile_error(err);
    }
  }
  free(exprs);
  free(flags);
  free(ids);
  return db;
}

/* Each matcher's expression: a word as its bytes in \xHH, a regex
 * translated; NULL for a regex with no translation. Returns 0, or -1 when
 * out of memory. */
static int engine_exprs(struct vs_engine *e, const options *o, unsigned char *take)
{
  for (size_t id = 0; id < o->nwords + o->nregexes; id++) {
    char *text = NULL;
    if (id < o->nwords) { /* a word: each byte as \xHH, a literal */
      size_t len = strlen(o->words[id]);
      if (!(text = malloc(4 * len + 1)))
        return -1;
      for (size_t i = 0; i < len; i++)
        snprintf(text + 4 * i, 5, "\\x%02x", (unsigned char)o->words[id][i]);
    } else {
      text = ere_translate(o->regex_texts[id - o->nwords]);
    }
    e->exprs[id] = text;
    take[id] = text != NULL;
  }
  return 0;
}

/* The widest match of each streamed matcher, as Vectorscan works it out.
 * The translation writes '^' only as an anchor (bytes are \xHH, sets
 * ranges): a matcher with one can only be followed from the body's start. */
static void engine_widths(struct vs_engine *e, size_t n, const unsigned char *take)
{
  for (size_t id = 0; id < n; id++) {
    if (!take[id])
      continue;
    hs_expr_info_t *info = NULL;
    hs_compile_error_t *err = NULL;
    e->width[id] = UINT_MAX;
    if (!strchr(e->exprs[id], '^') &&
        hs_expression_info(e->exprs[id], STREAM_FLAGS, &info, &err) == HS_SUCCESS)
      e->width[id] = info->max_width;
    free(info);
    hs_free_compile_error(err);
  }
}

static int any_of(const unsigned char *take, size_t n)
{
  for (size_t id = 0; id < n; id++)
    if (take[id])
      return 1;
  return 0;
}

/* Compiles the body matchers that Vectorscan takes. A pattern it rejects
 * (the compile error names it) is left to regexec and the rest compiled
 * again; an error of the whole set leaves them all to regexec. Returns 0,
 * or -1 when out of memory. */
int vs_build(engine *g, const options *o)
{
  size_t n = o->nwords + o->nregexes;
  struct vs_engine *e = g->vs = calloc(1, sizeof *g->vs);
  if (!e)
    return -1;
  e->exprs = calloc(n + 1, sizeof *e->exprs);
  e->width = calloc(n + 1, sizeof *e->width);
  unsigned char *take = calloc(n + 1, 1);
  int status = e->exprs && e->width && take ? engine_exprs(e, o, take) : -1;
  while (status == 0 && any_of(take, n)) {
    int bad;
    if ((e->db = engine_db(e, n, take, &bad)) != NULL)
      break;
    if (bad < 0)
      break; /* the set as a whole: none streams */
    take[bad] = 0;
  }
  if (status == 0 && e->db && hs_alloc_scratch(e->db, &e->scratch) != HS_SUCCESS)
    status = -1;
  if (status == 0 && e->db) {
    memcpy(g->streamed, take, n);
    engine_widths(e, n, take);
  }
  free(take);
  return status;
}

/* The narrowed database of the streamed matchers left[id] (those without
 * a hit): one compiled before, or compiled now while there is room for
 * it; NULL when there is none, or it did not compile. */
static hs_database_t *engine_narrowed(struct vs_engine *e, const options *o,
                                      const unsigned char *left)
{
  size_t n = o->nwords + o->nregexes;
  size_t i = 0;
  while (i < e->nnarrow && memcmp(e->narrow[i].left, left, n) != 0)
    i++;
  if (i == e->nnarrow) {
    if (i == NARROW_DBS || !(e->narrow[i].left = malloc(n + 1)))
      return NULL;
    memcpy(e->narrow[i].left, left, n);
    int bad;
    e->narrow[i].db = engine_db(e, n, left, &bad);
    /* The scratch grows to fit it: it serves every database. */
    if (e->narrow[i].db && hs_alloc_scratch(e->narrow[i].db, &e->scratch) != HS_SUCCESS) {
      hs_free_database(e->narrow[i].db);
      e->narrow[i].db = NULL;
    }
    e->nnarrow++;
  }
  return e->narrow[i].db;
}

void vs_free(engine *g, const options *o)
{
  struct vs_engine *e = g->vs;
  if (!e)
    return;
  for (size_t i = 0; i < e->nnarrow; i++) {
    hs_free_database(e->narrow[i].db);
    free(e->narrow[i].left);
  }
  hs_free_scratch(e->scratch);
  hs_free_database(e->db);
  for (size_t id = 0; e->exprs && id < o->nwords + o->nregexes; id++)
    free(e->exprs[id]);
  free(e->exprs);
  free(e->width);
  free(e);
  g->vs = NULL;
}

/* ---- Streams ------------------------------------------------------------- */

/* A streamed matcher's first match (SINGLEMATCH: its only report in a
 * stream), ending at stream offset to. Once every streamed matcher has a
 * hit, the stream has nothing more to say: a nonzero return ends its
 * scanning. */
static int on_stream_match(unsigned int id, unsigned long long from, unsigned long long to,
                           unsigned int flags, void *ctx)
{
  (void)from;
  (void)flags;
  slot *sl = ctx;
  struct vs_stream *st = sl->vs;
  if (verdict_hit(&sl->v, sl->scan->opt, id, st->stream_base + (size_t)to)) {
    st->undecided--;
    st->narrow_due = 1;
  }
  return st->undecided == 0;
}

/* Which streamed matchers have no hit yet: left[id]. */
static void undecided_set(const scan *s, const slot *sl, unsigned char *left)
{
  const options *o = s->opt;
  for (size_t id = 0; id < o->nwords + o->nregexes; id++)
    left[id] = s->engine.streamed[id] && !verdict_has(&sl->v, o, id);
}

/* Opens the slot's stream at body offset base on the database of the
 * streamed matchers without a hit, and feeds it the replay bytes that
 * come before base + replay_len. At the body's start (narrowing 0), all
 * of them serve when no narrowed database can be had; a narrowing
 * without one leaves the stream as it is. Returns 0, or -1 when out of
 * memory. */
static int stream_open(scan *s, slot *sl, int narrowing, size_t base, const char *replay,
                       size_t replay_len)
{
  struct vs_engine *e = s->engine.vs;
  struct vs_stream *st = sl->vs;
  const options *o = s->opt;
  hs_database_t *db = NULL;
  if (st->undecided < s->engine.nstreamed) {
    unsigned char *left = malloc(o->nwords + o->nregexes + 1);
    if (!left)
      return -1;
    undecided_set(s, sl, left);
    db = engine_narrowed(e, o, left);
    free(left);
  }
  if (!db && narrowing)
    return 0;
  hs_stream_t *next;
  if (hs_open_stream(db ? db : e->db, 0, &next) != HS_SUCCESS)
    return -1;
  if (st->stream)
    hs_close_stream(st->stream, e->scratch, NULL, NULL);
  st->stream = next;
  st->stream_base = base;
  if (replay_len) {
    hs_error_t err =
        hs_scan_stream(next, replay, (unsigned)replay_len, 0, e->scratch, on_stream_match, sl);
    if (err == HS_SCAN_TERMINATED)
      st->stream_over = 1;
    else if (err != HS_SUCCESS)
      return -1;
  }
  return 0;
}

/* The bytes a narrowing replays: the widest match left, less one; or
 * SIZE_MAX when one of those left is too wide to narrow for. */
static size_t replay_width(const scan *s, const slot *sl)
{
  const options *o = s->opt;
  const unsigned *width = s->engine.vs->width;
  size_t replay = 0;
  for (size_t id = 0; id < o->nwords + o->nregexes; id++) {
    if (!s->engine.streamed[id] || verdict_has(&sl->v, o, id))
      continue;
    if (width[id] > NARROW_WIDTH)
      return SIZE_MAX;
    if (width[id] > replay + 1)
      replay = width[id] - 1;
  }
  return replay;
}

/* After a slice (data, len) that the stream saw: when matchers hit since
 * the stream opened and those left have bounded widths, a stream of them
 * alone takes over (see the top of this file), first fed the bytes it
 * needs from the slice, or from the tail kept for it while the slices are
 * too short. Returns 0, or -1 when out of memory. */
static int stream_narrow(scan *s, slot *sl, const char *data, size_t len)
{
  struct vs_stream *st = sl->vs;
  size_t replay = replay_width(s, sl);
  if (replay == SIZE_MAX) {
    st->narrow_due = 0; /* until that one hits */
    st->tail_len = 0;
    return 0;
  }
  if (replay > st->body_seen)
    replay = st->body_seen;
  const char *from;
  if (len >= replay) {
    from = data + len - replay;
  } else {
    /* Keeps the last bytes seen until there are enough of them. */
    if (!st->tail && !(st->tail = malloc(NARROW_WIDTH)))
      return -1;
    if (st->tail_len + len > NARROW_WIDTH) {
      size_t drop = st->tail_len + len - NARROW_WIDTH;
      memmove(st->tail, st->tail + drop, st->tail_len - drop);
      st->tail_len -= drop;
    }
    memcpy(st->tail + st->tail_len, data, len);
    st->tail_len += len;
    if (st->tail_len < replay)
      return 0; /* the next slice */
    from = st->tail + st->tail_len - replay;
  }
  st->narrow_due = 0;
  st->tail_len = 0;
  return stream_open(s, sl, 1, st->body_seen - replay, from, replay);
}

int vs_begin(scan *s, slot *sl)
{
  const options *o = s->opt;
  if (!s->engine.vs || !s->engine.vs->db)
    return 0;
  if (!sl->vs && !(sl->vs = calloc(1, sizeof *sl->vs)))
    return -1;
  struct vs_stream *st = sl->vs;
  st->undecided = 0;
  for (size_t id = 0; id < o->nwords + o->nregexes; id++)
    st->undecided += s->engine.streamed[id] && !verdict_has(&sl->v, o, id);
  st->stream_base = st->body_seen = st->tail_len = 0;
  st->narrow_due = 0;
  /* A target that its status rules out is not looked at. */
  st->stream_over = sl->v.status_missed || st->undecided == 0;
  return st->stream_over ? 0 : stream_open(s, sl, 0, 0, NULL, 0);
}

int vs_feed(scan *s, slot *sl, const char *data, size_t len)
{
  struct vs_stream *st = sl->vs;
  if (!st || !st->stream)
    return 0;
  for (size_t done = 0; !st->stream_over && done < len;) {
    unsigned n = len - done < UINT_MAX / 2 ? (unsigned)(len - done) : UINT_MAX / 2;
    hs_error_t err = hs_scan_stream(st->stream, data + done, n, 0, s->engine.vs->scratch,
                                    on_stream_match, sl);
    if (err == HS_SCAN_TERMINATED)
      st->stream_over = 1;
    else if (err != HS_SUCCESS)
      return -1;
    done += n;
  }
  st->body_seen += len;
  if (!st->stream_over && st->narrow_due && stream_narrow(s, sl, data, len) != 0)
    return -1;
  return 0;
}

void vs_close(scan *s, slot *sl, int eod)
{
  struct vs_stream *st = sl->vs;
  if (st && st->stream)
    hs_close_stream(st->stream, s->engine.vs->scratch,
                    eod && !st->stream_over ? on_stream_match : NULL, sl);
  if (st)
    st->stream = NULL;
}

void vs_slot_free(slot *sl)
{
  if (sl->vs)
    free(sl->vs->tail);
  free(sl->vs);
  sl->vs = NULL;
}

#else /* no Vectorscan: nothing streams */

const char *engine_name(void) { return "none (built without Vectorscan)"; }

void engine_usage(FILE *out)
{
  fputs("Engine: this build has no Vectorscan: --word and --regex run with\n"
        "regexec over the body kept whole once it has arrived.\n",
        out);
}

int vs_build(engine *g, const options *o)
{
  (void)g;
  (void)o;
  return 0;
}

void vs_free(engine *g, const options *o)
{
  (void)g;
  (void)o;
}

int vs_begin(scan *s, slot *sl)
{
  (void)s;
  (void)sl;
  return 0;
}

int vs_feed(scan *s, slot *sl, const char *data, size_t len)
{
  (void)s;
  (void)sl;
  (void)data;
  (void)len;
  return 0;
}

void vs_close(scan *s, slot *sl, int eod)
{
  (void)s;
  (void)sl;
  (void)eod;
}

void vs_slot_free(slot *sl) { (void)sl; }

#endif
