/* scan's streaming engine: Vectorscan runs the --word and --regex
 * matchers of the body over each body as it arrives, in the body observer
 * (a stream per transfer: matches that straddle the slices curl delivers
 * are found, and the body need not be kept); what it does not take runs
 * with PCRE2 over the body kept whole (eval-match.c, base-re.c).
 *
 * Databases are compiled once per machine and template set: each compile
 * goes through the disk cache (eval-cache.c), keyed by what it is made of.
 *
 * This is the only file that knows whether the build has Vectorscan: with
 * SCAN_HAVE_VECTORSCAN=1 (meson defines it where libhs is found) the
 * engine, else the few functions that say there is none. */
#include "eval.h"

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
 * the last width bytes the old one saw, so that no match ending past the
 * switch is missed, nor one ending at it that only what follows decides
 * ($ and \z, when the body ends there: the old stream was closed before
 * it knew). None that the old stream could report ends in those replayed
 * bytes: it would have. Narrowed databases are compiled when
 * first wanted and kept, at most NARROW_DBS of them, so that compiling
 * stays a bounded cost of the whole scan; with -t they go to the clusters
 * whose responses come many times for a target (eval_cluster's hot), where
 * a database sized to the cluster saves the most: the official templates'
 * payload blocks make nine requests in ten, and a stream through a part of
 * 4,096 expressions costs some 25,000 instructions for a 404's body. */
#define NARROW_DBS   EVAL_HOT_CLUSTERS
#define NARROW_WIDTH 4096 /* the widest match narrowing replays for */

/* Parts. The streamed matchers of all templates are compiled in parts of
 * at most PART_EXPRS expressions each, a database per part, and a stream
 * without a narrowed database runs one stream per part. Vectorscan's
 * compile holds all the expressions of a database at once, and more than
 * linearly in their number: the 16,500 of nuclei's official templates in
 * one took 67 MiB above what the scan holds, and 4.6 s; in four parts,
 * 34 MiB and 2.5 s (the scan's peak RSS, cold: 156 MiB, now 124). A part
 * holds a range of matcher ids, and a template's matchers have ids next
 * to each other, so a body goes through the streams of the parts that
 * hold its cluster's matchers alone: most clusters' are in one part. */
#define PART_EXPRS 4096

/* The engine's own part of the engine. */
struct vs_engine {
  hs_database_t **db; /* all streamed matchers, in nparts parts (see PART_EXPRS) */
  size_t *part_end;    /* part p's matcher ids are below part_end[p] (and not below p - 1's) */
  size_t nparts;       /* 0: nothing streams */
  hs_scratch_t *scratch;
  char **exprs;     /* per matcher id: its Vectorscan expression, or NULL */
  unsigned *width;  /* per matcher id: its widest match, UINT_MAX if unbounded */
  struct narrowed { /* a database of the matchers left[0 .. nleft-1] */
    size_t *left;   /* ascending */
    size_t nleft;
    hs_database_t *db; /* NULL: it did not compile */
  } narrow[NARROW_DBS];
  size_t nnarrow;
  hs_database_t *ex_db; /* the prefiltered extractors; NULL: none */
  size_t cached, compiled; /* databases read from the disk cache, compiled */
};

/* A reading's stream. */
struct vs_stream {
  size_t nopen;           /* streams open in stream[]: 1 on a narrowed database, else a part's each */
  int stream_over;        /* nothing more to learn from it: no more scanning */
  size_t undecided;       /* streamed matchers without a hit */
  size_t stream_base;     /* the body offset of the stream's first byte */
  size_t body_seen;       /* bytes of this hop's body observed */
  int narrow_due;         /* a streamed matcher hit since the stream opened */
  char *tail;             /* NARROW_WIDTH bytes: the last ones seen, while a */
  size_t tail_len;        /* narrowing waits for enough of them to replay */
  hs_stream_t *ex_stream; /* the extractors' prefilter, for this hop's body */
  hs_stream_t *stream[];  /* from the body's first slice (or a narrowing) to the target's end */
};

int engine_streams(void) { return 1; }

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
          "reference, a lookaround, one that matches the empty text) runs with\n"
          "PCRE2 over the body kept whole, with the same meaning.\n",
          engine_name());
}

/* The regexes as PCRE2 reads them: no flags but those written in them
 * ((?i), (?s), (?m)), bytes. SINGLEMATCH: the first match of each is all
 * that is reported. */
#define STREAM_FLAGS HS_FLAG_SINGLEMATCH

/* Frees a compile error, if any. Each call into libhs first checks the
 * CPU with CPUID, which a hypervisor may trap (some 10 µs each on a VM),
 * so the thousands of calls for no error at all are not made. */
static void error_free(hs_compile_error_t *err)
{
  if (err)
    hs_free_compile_error(err);
}

/* ---- Compiling, through the disk cache (eval-cache.c) ------------------ */

/* What the cache keeps: a compile's database serialized, or which
 * expression Vectorscan rejected (so that a set holding one is not
 * compiled again only to fail; vs_build and vs_extract_build drop it and
 * try the rest); the widths of a set's expressions (engine_widths). */
enum { KEPT_DB = 1, KEPT_REJECT = 2, KEPT_WIDTHS = 3 };

/* The start of a key of the cache: what it is of (tag), Vectorscan's
 * version and the CPU it tunes for (hs_populate_platform: a database made
 * for one machine's instructions is refused by another's). 0 or -1. */
static int key_begin(cache_key *c, const char *tag)
{
  hs_platform_info_t platform;
  memset(&platform, 0, sizeof platform);
  if (cache_key_init(c) != 0)
    return -1;
  const char *version = hs_version();
  unsigned mode = HS_MODE_STREAM;
  cache_key_add(c, tag, strlen(tag));
  cache_key_add(c, version, strlen(version));
  cache_key_add(c, &mode, sizeof mode);
  if (hs_populate_platform(&platform) != HS_SUCCESS) {
    unsigned char none[CACHE_KEY];
    cache_key_end(c, none);
    return -1;
  }
  cache_key_add(c, &platform, sizeof platform);
  return 0;
}

/* One expression of a key, with its flags and id. */
static void key_expr(cache_key *c, const char *text, unsigned flags, unsigned id)
{
  unsigned about[2] = {flags, id};
  cache_key_add(c, about, sizeof about);
  cache_key_add(c, text, strlen(text));
}

/* The key of a compile: everything the database depends on. */
static int compile_key(const char *const *exprs, const unsigned *flags, const unsigned *ids,
                       unsigned k, unsigned char key[CACHE_KEY])
{
  cache_key c;
  if (key_begin(&c, "database") != 0)
    return -1;
  for (unsigned i = 0; i < k; i++)
    key_expr(&c, exprs[i], flags ? flags[i] : 0, ids[i]);
  return cache_key_end(&c, key);
}

/* What the cache holds for key: a database (returned), or in *rejected
 * which of the k expressions Vectorscan rejects; NULL and -1 when it
 * holds nothing usable (a file that does not deserialize is a miss). */
static hs_database_t *compile_kept(const unsigned char key[CACHE_KEY], unsigned k, int *rejected)
{
  int kind = 0;
  size_t len = 0;
  char *kept = cache_get(key, &kind, &len);
  hs_database_t *db = NULL;
  *rejected = -1;
  if (kept && kind == KEPT_DB && hs_deserialize_database(kept, len, &db) != HS_SUCCESS)
    db = NULL;
  if (kept && kind == KEPT_REJECT && len == sizeof *rejected) {
    memcpy(rejected, kept, sizeof *rejected);
    if (*rejected < 0 || (unsigned)*rejected >= k)
      *rejected = -1;
  }
  free(kept);
  return db;
}

/* hs_compile_multi in stream mode, through the cache: the database, or
 * NULL with *rejected the index among the k expressions of one Vectorscan
 * rejects (-1: the set as a whole, or out of memory). */
static hs_database_t *vs_compile(struct vs_engine *e, const char *const *exprs,
                                 const unsigned *flags, const unsigned *ids, unsigned k,
                                 int *rejected)
{
  unsigned char key[CACHE_KEY];
  int keyed = compile_key(exprs, flags, ids, k, key) == 0;
  hs_database_t *db = keyed ? compile_kept(key, k, rejected) : NULL;
  if (keyed && (db || *rejected >= 0)) {
    e->cached++;
    return db;
  }
  hs_compile_error_t *err = NULL;
  *rejected = -1;
  e->compiled++;
  if (hs_compile_multi(exprs, flags, ids, k, HS_MODE_STREAM, NULL, &db, &err) != HS_SUCCESS) {
    db = NULL;
    if (err && err->expression >= 0 && (unsigned)err->expression < k)
      *rejected = err->expression;
    error_free(err);
    if (keyed && *rejected >= 0)
      cache_put(key, KEPT_REJECT, rejected, sizeof *rejected);
    return NULL;
  }
  char *bytes = NULL;
  size_t len = 0;
  if (keyed && hs_serialize_database(db, &bytes, &len) == HS_SUCCESS)
    cache_put(key, KEPT_DB, bytes, len);
  free(bytes);
  return db;
}

void vs_compiles(const engine *g, size_t *cached, size_t *compiled)
{
  *cached = g->vs ? g->vs->cached : 0;
  *compiled = g->vs ? g->vs->compiled : 0;
}

/* ---- Databases ----------------------------------------------------------- */

/* A database of the matchers take[id] (each with an expression), or
 * NULL with *bad the index among them of one Vectorscan rejects (-1: the
 * set as a whole, or out of memory). */
static hs_database_t *engine_db(struct vs_engine *g, size_t n, const unsigned char *take, int *bad)
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
    int rejected;
    if (!(db = vs_compile(g, exprs, flags, ids, k, &rejected)) && rejected >= 0)
      *bad = (int)ids[rejected];
  }
  free(exprs);
  free(flags);
  free(ids);
  return db;
}

/* Whether Vectorscan would read regex text otherwise than RE2: with a
 * ^ under (?m) (see regex_re2) and a match that may be empty, which RE2
 * also finds after a newline that ends the body. */
static int line_start_differs(const char *text, int line_start)
{
  hs_expr_info_t *info = NULL;
  hs_compile_error_t *err = NULL;
  int differs = line_start && hs_expression_info(text, STREAM_FLAGS, &info, &err) == HS_SUCCESS &&
                info->min_width == 0;
  free(info);
  error_free(err);
  return differs;
}

/* Each matcher's expression: a word as its bytes in \xHH, a regex as
 * regex_re2 writes it (Vectorscan reads PCRE syntax), unless Vectorscan
 * would read it otherwise (left to PCRE2). Returns 0, or -1 when out of
 * memory. */
static int engine_exprs(struct vs_engine *e, const matchers *o, unsigned char *take)
{
  for (size_t id = 0; id < o->nwords + o->nregexes; id++) {
    char *text = NULL;
    int line_start = 0;
    if (id < o->nwords) { /* a word: each byte as \xHH, a literal; (?i) for --iword */
      size_t len = strlen(o->words[id]), at = o->word_nocase[id] ? 4 : 0;
      if (!(text = malloc(at + 4 * len + 1)))
        return -1;
      memcpy(text, "(?i)", at + 1);
      for (size_t i = 0; i < len; i++)
        snprintf(text + at + 4 * i, 5, "\\x%02x", (unsigned char)o->words[id][i]);
    } else {
      if (!(text = regex_re2(o->regexes[id - o->nwords].text, &line_start)))
        return -1;
    }
    e->exprs[id] = text;
    take[id] = !line_start_differs(text, line_start);
  }
  return 0;
}

/* Whether a regex may look at bytes before its match: ^ (a line's start
 * under (?m), and anchors in general), \b \B, \A \G, a lookbehind, or a
 * flag group that turns (?m) on. Replayed from the middle of a body, such
 * a one could match where it does not, so it is never narrowed for. The
 * test errs towards yes: a '^' in [^...] or a \\b counts too. */
static int looks_behind(const char *re)
{
  if (strchr(re, '^') || strstr(re, "\\b") || strstr(re, "\\B") || strstr(re, "\\A") ||
      strstr(re, "\\G") || strstr(re, "(?<"))
    return 1;
  for (const char *p = re; (p = strstr(p, "(?")) != NULL; p += 2) {
    size_t flags = strspn(p + 2, "imnsxJU-^");
    if (memchr(p + 2, 'm', flags))
      return 1;
  }
  return 0;
}

/* The widest match of each streamed matcher, as Vectorscan works it out;
 * UINT_MAX for one that looks behind (see looks_behind), which can only
 * be followed from the body's start. Working it out takes as long as
 * compiling, so the widths go through the cache too, keyed by the
 * expressions. */
static void engine_widths(struct vs_engine *e, size_t n, const unsigned char *take)
{
  cache_key c;
  unsigned char key[CACHE_KEY];
  size_t k = 0, len = 0;
  int kind = 0, keyed = key_begin(&c, "widths") == 0;
  for (size_t id = 0; id < n; id++)
    if (take[id]) {
      if (keyed)
        key_expr(&c, e->exprs[id], STREAM_FLAGS, (unsigned)id);
      k++;
    }
  keyed = keyed && cache_key_end(&c, key) == 0;
  unsigned *kept = keyed ? cache_get(key, &kind, &len) : NULL;
  if (kept && kind == KEPT_WIDTHS && len == k * sizeof *kept) {
    for (size_t id = 0, i = 0; id < n; id++)
      if (take[id])
        e->width[id] = kept[i++];
    free(kept);
    return;
  }
  free(kept);
  unsigned *widths = calloc(k + 1, sizeof *widths);
  for (size_t id = 0, i = 0; id < n; id++) {
    if (!take[id])
      continue;
    hs_expr_info_t *info = NULL;
    hs_compile_error_t *err = NULL;
    e->width[id] = UINT_MAX;
    if (!looks_behind(e->exprs[id]) &&
        hs_expression_info(e->exprs[id], STREAM_FLAGS, &info, &err) == HS_SUCCESS)
      e->width[id] = info->max_width;
    free(info);
    error_free(err);
    if (widths)
      widths[i++] = e->width[id];
  }
  if (keyed && widths)
    cache_put(key, KEPT_WIDTHS, widths, k * sizeof *widths);
  free(widths);
}

static int any_of(const unsigned char *take, size_t n)
{
  for (size_t id = 0; id < n; id++)
    if (take[id])
      return 1;
  return 0;
}

/* The database of the matchers in_part[id], the next of e's parts: a pattern
 * Vectorscan rejects (the compile error names it) is left to PCRE2 and
 * the rest compiled again; an error of the part as a whole leaves its
 * matchers to PCRE2. Either way take[id] is cleared for those it leaves.
 * Returns 0, or -1 when out of memory. */
static int engine_part(struct vs_engine *e, size_t n, unsigned char *in_part, unsigned char *take,
                       size_t end)
{
  hs_database_t *db = NULL;
  while (any_of(in_part, n)) {
    int bad;
    if ((db = engine_db(e, n, in_part, &bad)) != NULL)
      break;
    if (bad < 0)
      break; /* the part as a whole: none of it streams */
    in_part[bad] = take[bad] = 0;
  }
  for (size_t id = 0; !db && id < n; id++)
    take[id] &= !in_part[id];
  if (!db)
    return 0;
  e->part_end[e->nparts] = end;
  e->db[e->nparts++] = db;
  return hs_alloc_scratch(db, &e->scratch) == HS_SUCCESS ? 0 : -1;
}

/* Compiles the body matchers that Vectorscan takes, in parts (see
 * PART_EXPRS; engine_part says what is left to PCRE2). Returns 0, or -1
 * when out of memory. */
int vs_build(engine *g)
{
  const matchers *o = g->m;
  size_t n = o->nwords + o->nregexes;
  struct vs_engine *e = g->vs ? g->vs : (g->vs = calloc(1, sizeof *g->vs));
  if (!e)
    return -1;
  e->exprs = calloc(n + 1, sizeof *e->exprs);
  e->width = calloc(n + 1, sizeof *e->width);
  unsigned char *take = calloc(n + 1, 1), *in_part = calloc(n + 1, 1);
  int status = e->exprs && e->width && take && in_part ? engine_exprs(e, o, take) : -1;
  size_t k = 0;
  for (size_t id = 0; status == 0 && id < n; id++) {
    take[id] &= !(g->few_only && g->few_only[id]); /* eval-literal.c's */
    k += take[id];
  }
  size_t nparts = (k + PART_EXPRS - 1) / PART_EXPRS;
  if (status == 0 && nparts &&
      (!(e->db = calloc(nparts, sizeof *e->db)) ||
       !(e->part_end = calloc(nparts, sizeof *e->part_end))))
    status = -1;
  /* Part p: the taken ids from the (p * k / nparts)th on, as many as
   * make the parts even. */
  for (size_t p = 0, id = 0, seen = 0; status == 0 && p < nparts; p++) {
    size_t end = (p + 1) * k / nparts;
    memset(in_part, 0, n);
    for (; id < n && seen < end; id++)
      if (take[id])
        in_part[id] = 1, seen++;
    status = engine_part(e, n, in_part, take, id);
  }
  if (status == 0 && e->nparts) {
    memcpy(g->streamed, take, n);
    engine_widths(e, n, take);
  }
  free(take);
  free(in_part);
  return status;
}

/* The narrowed database of the streamed matchers left[0 .. nleft-1]
 * (those without a hit, ascending): one compiled before, or compiled now
 * while there is room for it; NULL when there is none, or it did not
 * compile. Finding it costs the length of left, whatever the number of
 * matchers. */
static hs_database_t *engine_narrowed(struct vs_engine *e, const matchers *o, const size_t *left,
                                      size_t nleft)
{
  size_t i = 0;
  while (i < e->nnarrow && (e->narrow[i].nleft != nleft ||
                            memcmp(e->narrow[i].left, left, nleft * sizeof *left) != 0))
    i++;
  if (i == e->nnarrow) {
    size_t n = o->nwords + o->nregexes;
    unsigned char *take = i < NARROW_DBS ? calloc(n + 1, 1) : NULL;
    if (!take || !(e->narrow[i].left = malloc((nleft + 1) * sizeof *left))) {
      free(take);
      return NULL;
    }
    memcpy(e->narrow[i].left, left, nleft * sizeof *left);
    e->narrow[i].nleft = nleft;
    for (size_t k = 0; k < nleft; k++)
      take[left[k]] = 1;
    int bad;
    e->narrow[i].db = engine_db(e, n, take, &bad);
    free(take);
    /* The scratch grows to fit it: it serves every database. */
    if (e->narrow[i].db && hs_alloc_scratch(e->narrow[i].db, &e->scratch) != HS_SUCCESS) {
      hs_free_database(e->narrow[i].db);
      e->narrow[i].db = NULL;
    }
    e->nnarrow++;
  }
  return e->narrow[i].db;
}

void vs_free(engine *g)
{
  const matchers *o = g->m;
  struct vs_engine *e = g->vs;
  if (!e)
    return;
  for (size_t i = 0; i < e->nnarrow; i++) {
    hs_free_database(e->narrow[i].db);
    free(e->narrow[i].left);
  }
  hs_free_scratch(e->scratch);
  for (size_t p = 0; p < e->nparts; p++)
    hs_free_database(e->db[p]);
  free(e->db);
  free(e->part_end);
  hs_free_database(e->ex_db);
  for (size_t id = 0; e->exprs && id < o->nwords + o->nregexes; id++)
    free(e->exprs[id]);
  free(e->exprs);
  free(e->width);
  free(e);
  g->vs = NULL;
  free(g->ex_filtered);
  free(g->ex_width);
  g->ex_filtered = NULL;
  g->ex_width = NULL;
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
  reading *r = ctx;
  struct vs_stream *st = r->vs;
  /* The database of all streamed matchers serves a cluster whose own
   * could not be had: the others' matches are not its. */
  if (reading_takes(r, id) && verdict_hit(&r->v, r->g->m, id, st->stream_base + (size_t)to)) {
    st->undecided--;
    st->narrow_due = 1;
  }
  return st->undecided == 0;
}

/* The reading's streamed matchers that have no hit yet, ascending, into
 * left; returns how many. */
static size_t undecided_list(const reading *r, size_t *left)
{
  size_t n = 0;
  for (size_t k = 0; k < r->nids; k++) {
    size_t id = reading_id(r, k);
    if (r->g->streamed[id] && !verdict_has(&r->v, r->g->m, id))
      left[n++] = id;
  }
  return n;
}

/* Scans (data, len) with each open stream of the reading, until one ends
 * the scanning (every streamed matcher has a hit). Returns 0, or -1 when
 * Vectorscan fails. */
static int streams_scan(reading *r, const char *data, size_t len)
{
  struct vs_stream *st = r->vs;
  for (size_t i = 0; !st->stream_over && i < st->nopen; i++)
    for (size_t done = 0; !st->stream_over && done < len;) {
      unsigned n = len - done < UINT_MAX / 2 ? (unsigned)(len - done) : UINT_MAX / 2;
      hs_error_t err =
          hs_scan_stream(st->stream[i], data + done, n, 0, r->g->vs->scratch, on_stream_match, r);
      if (err == HS_SCAN_TERMINATED)
        st->stream_over = 1;
      else if (err != HS_SUCCESS)
        return -1;
      done += n;
    }
  return 0;
}

/* Closes the reading's open streams, reporting to on the matches that
 * end at the body's end (NULL: none are wanted). */
static void streams_close(reading *r, match_event_handler on)
{
  struct vs_stream *st = r->vs;
  for (size_t i = 0; i < st->nopen; i++)
    hs_close_stream(st->stream[i], r->g->vs->scratch, st->stream_over ? NULL : on, r);
  st->nopen = 0;
}

/* Opens a stream of the reading on db: 0, or -1. */
static int open_on(struct vs_stream *st, hs_database_t *db)
{
  if (hs_open_stream(db, 0, &st->stream[st->nopen]) != HS_SUCCESS)
    return -1;
  st->nopen++;
  return 0;
}

/* Opens the reading's streams at body offset base on the database of the
 * streamed matchers without a hit, and feeds them the replay bytes that
 * come before base + replay_len. At the body's start (narrowing 0), when
 * no narrowed database can be had, those of the parts that hold one of
 * them serve (left is ascending, as the parts' ranges); a narrowing
 * without one leaves the streams as they are. Returns 0, or -1 when out
 * of memory. */
static int stream_open(reading *r, int narrowing, size_t base, const char *replay,
                       size_t replay_len)
{
  struct vs_engine *e = r->g->vs;
  struct vs_stream *st = r->vs;
  size_t *left = malloc((r->nids + 1) * sizeof *left);
  if (!left)
    return -1;
  size_t nleft = undecided_list(r, left);
  /* Narrowed databases are few: with -t, a cluster whose responses come
   * many times has them (the others' come once per target). */
  int worth = !r->g->clusters || r->g->clusters[r->cluster].hot;
  hs_database_t *db = worth && st->undecided < r->g->nstreamed
                          ? engine_narrowed(e, r->g->m, left, nleft)
                          : NULL;
  int rc = 0;
  if (db || !narrowing) {
    streams_close(r, NULL);
    if (db)
      rc = open_on(st, db);
    for (size_t p = 0, k = 0; !db && rc == 0 && p < e->nparts; p++) {
      int holds = 0;
      for (; k < nleft && left[k] < e->part_end[p]; k++)
        holds = 1;
      if (holds)
        rc = open_on(st, e->db[p]);
    }
    st->stream_base = base;
    if (rc == 0)
      rc = streams_scan(r, replay, replay_len);
  }
  free(left);
  return rc;
}

/* The bytes a narrowing replays: the widest match left; or
 * SIZE_MAX when one of those left is too wide to narrow for. */
static size_t replay_width(const reading *r)
{
  const unsigned *width = r->g->vs->width;
  size_t replay = 0;
  for (size_t k = 0; k < r->nids; k++) {
    size_t id = reading_id(r, k);
    if (!r->g->streamed[id] || verdict_has(&r->v, r->g->m, id))
      continue;
    if (width[id] > NARROW_WIDTH)
      return SIZE_MAX;
    if (width[id] > replay)
      replay = width[id];
  }
  return replay;
}

/* After a slice (data, len) that the stream saw: when matchers hit since
 * the stream opened and those left have bounded widths, a stream of them
 * alone takes over (see the top of this file), first fed the bytes it
 * needs from the slice, or from the tail kept for it while the slices are
 * too short. Returns 0, or -1 when out of memory. */
static int stream_narrow(reading *r, const char *data, size_t len)
{
  struct vs_stream *st = r->vs;
  size_t replay = replay_width(r);
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
  return stream_open(r, 1, st->body_seen - replay, from, replay);
}

int vs_begin(reading *r)
{
  const struct vs_engine *e = r->g->vs;
  if (!e || !e->nparts)
    return 0;
  if (!r->vs && !(r->vs = calloc(1, sizeof *r->vs + e->nparts * sizeof *r->vs->stream)))
    return -1;
  struct vs_stream *st = r->vs;
  st->undecided = 0;
  for (size_t k = 0; k < r->nids; k++) {
    size_t id = reading_id(r, k);
    st->undecided += r->g->streamed[id] && !verdict_has(&r->v, r->g->m, id);
  }
  st->stream_base = st->body_seen = st->tail_len = 0;
  st->narrow_due = 0;
  /* A target that its status rules out is not looked at. */
  st->stream_over = r->v.status_missed || st->undecided == 0;
  return st->stream_over ? 0 : stream_open(r, 0, 0, NULL, 0);
}

int vs_feed(reading *r, const char *data, size_t len)
{
  struct vs_stream *st = r->vs;
  if (!st || !st->nopen)
    return 0;
  if (streams_scan(r, data, len) != 0)
    return -1;
  st->body_seen += len;
  if (!st->stream_over && st->narrow_due && stream_narrow(r, data, len) != 0)
    return -1;
  return 0;
}

void vs_close(reading *r, int eod)
{
  struct vs_stream *st = r->vs;
  if (st)
    streams_close(r, eod ? on_stream_match : NULL);
  if (st && st->ex_stream)
    hs_close_stream(st->ex_stream, r->g->vs->scratch, NULL, NULL);
  if (st)
    st->ex_stream = NULL;
}

void vs_stream_free(reading *r)
{
  if (r->vs)
    free(r->vs->tail);
  free(r->vs);
  r->vs = NULL;
}

/* ---- The extractors' prefilter ------------------------------------------- */

/* A match of extractor id ends here: its slice is due for PCRE2. */
static int on_extract_match(unsigned int id, unsigned long long from, unsigned long long to,
                            unsigned int flags, void *ctx)
{
  (void)from;
  (void)to;
  (void)flags;
  ((unsigned char *)ctx)[id] = 1;
  return 0;
}

/* A database of the extractors take[i] (as regex_re2 writes them), every
 * match reported; NULL with *bad the one Vectorscan rejects (-1: the set,
 * or out of memory). */
static hs_database_t *extract_db(struct vs_engine *e, const matchers *o,
                                 const unsigned char *take, int *bad)
{
  size_t n = o->nextracts;
  char **exprs = calloc(n + 1, sizeof *exprs);
  unsigned *ids = calloc(n + 1, sizeof *ids);
  hs_database_t *db = NULL;
  unsigned k = 0;
  int rejected, nomem = !exprs || !ids;
  *bad = -1;
  for (size_t i = 0; !nomem && i < n; i++)
    if (take[i]) {
      nomem = !(exprs[k] = regex_re2(o->extracts[i].text, NULL));
      ids[k++] = (unsigned)i;
    }
  if (!nomem && !(db = vs_compile(e, (const char *const *)exprs, NULL, ids, k, &rejected)) &&
      rejected >= 0)
    *bad = (int)ids[rejected];
  for (unsigned i = 0; exprs && i < k; i++)
    free(exprs[i]);
  free(exprs);
  free(ids);
  return db;
}

/* Whether a regex may have a match that Vectorscan reports only at the
 * body's end, when it knows what follows: $, \Z, \z, \b, \B. For such a
 * one the search does not move on by width (eval-extract.c), so that the
 * last pass over the window finds it. Errs towards yes. */
static int looks_at_end(const char *re)
{
  return strchr(re, '$') || strstr(re, "\\Z") || strstr(re, "\\z") || strstr(re, "\\b") ||
         strstr(re, "\\B");
}

int vs_extract_build(engine *g)
{
  const matchers *o = g->m;
  size_t n = o->nextracts;
  struct vs_engine *e = g->vs ? g->vs : (g->vs = calloc(1, sizeof *g->vs));
  unsigned char *take = calloc(n + 1, 1);
  g->ex_filtered = calloc(n + 1, 1);
  g->ex_width = calloc(n + 1, sizeof *g->ex_width);
  if (!e || !take || !g->ex_filtered || !g->ex_width) {
    free(take);
    return -1;
  }
  memset(take, 1, n);
  while (any_of(take, n)) {
    int bad;
    if ((e->ex_db = extract_db(e, o, take, &bad)) != NULL || bad < 0)
      break;
    take[bad] = 0; /* PCRE2 scans every slice for it */
  }
  int status = 0;
  if (e->ex_db && hs_alloc_scratch(e->ex_db, &e->scratch) != HS_SUCCESS)
    status = -1;
  for (size_t i = 0; status == 0 && e->ex_db && i < n; i++) {
    hs_expr_info_t *info = NULL;
    hs_compile_error_t *err = NULL;
    g->ex_filtered[i] = take[i];
    g->ex_width[i] = UINT_MAX;
    if (take[i] && !looks_at_end(o->extracts[i].text) &&
        hs_expression_info(o->extracts[i].text, 0, &info, &err) == HS_SUCCESS)
      g->ex_width[i] = info->max_width;
    free(info);
    error_free(err);
  }
  free(take);
  return status;
}

int vs_extract_begin(reading *r)
{
  struct vs_engine *e = r->g->vs;
  if (!e || !e->ex_db)
    return 0;
  if (!r->vs && !(r->vs = calloc(1, sizeof *r->vs)))
    return -1;
  struct vs_stream *st = r->vs;
  if (st->ex_stream)
    hs_close_stream(st->ex_stream, e->scratch, NULL, NULL);
  st->ex_stream = NULL;
  return hs_open_stream(e->ex_db, 0, &st->ex_stream) == HS_SUCCESS ? 0 : -1;
}

int vs_extract_feed(reading *r, const char *data, size_t len, unsigned char *due)
{
  struct vs_stream *st = r->vs;
  if (!st || !st->ex_stream)
    return 0;
  for (size_t done = 0; done < len;) {
    unsigned n = len - done < UINT_MAX / 2 ? (unsigned)(len - done) : UINT_MAX / 2;
    if (hs_scan_stream(st->ex_stream, data + done, n, 0, r->g->vs->scratch, on_extract_match,
                       due) != HS_SUCCESS)
      return -1;
    done += n;
  }
  return 0;
}

#else /* no Vectorscan: nothing streams */

const char *engine_name(void) { return "none (built without Vectorscan)"; }

int engine_streams(void) { return 0; }

void vs_compiles(const engine *g, size_t *cached, size_t *compiled)
{
  (void)g;
  *cached = *compiled = 0;
}

void engine_usage(FILE *out)
{
  fputs("Engine: this build has no Vectorscan: --word and --regex run with\n"
        "PCRE2 over the body kept whole once it has arrived.\n",
        out);
}

int vs_build(engine *g)
{
  (void)g;
  return 0;
}

void vs_free(engine *g) { (void)g; }

int vs_begin(reading *r)
{
  (void)r;
  return 0;
}

int vs_feed(reading *r, const char *data, size_t len)
{
  (void)r;
  (void)data;
  (void)len;
  return 0;
}

void vs_close(reading *r, int eod)
{
  (void)r;
  (void)eod;
}

void vs_stream_free(reading *r) { (void)r; }

int vs_extract_build(engine *g)
{
  (void)g;
  return 0;
}

int vs_extract_begin(reading *r)
{
  (void)r;
  return 0;
}

int vs_extract_feed(reading *r, const char *data, size_t len, unsigned char *due)
{
  (void)r;
  (void)data;
  (void)len;
  (void)due;
  return 0;
}

#endif
