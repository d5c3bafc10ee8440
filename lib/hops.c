/* Hops: splitting curl's header lines into responses, the framing of the
 * last hop's body read once at the end of its header block, and header
 * lookup by scanning the raw block (blocks are small; no index is kept). */
#include "hops.h"
#include "ascii.h"

#include <string.h>

#define RAW_LIMIT (SIZE_MAX / 2) /* per-hop caps bound the real size */

/* The empty line that ends a header block. */
static int is_blank_line(const char *s, size_t n)
{
  return n == 0 || (n == 1 && s[0] == '\n') || (n == 2 && s[0] == '\r' && s[1] == '\n');
}

static int is_status_line(const char *s, size_t n) { return n >= 5 && memcmp(s, "HTTP/", 5) == 0; }

static size_t digits(const char *s, size_t n, size_t i, int *value, int max_digits)
{
  size_t start = i;
  *value = 0;
  while (i < n && i - start < (size_t)max_digits && s[i] >= '0' && s[i] <= '9')
    *value = *value * 10 + (s[i++] - '0');
  return i - start;
}

/* "HTTP/1.1 200 OK", "HTTP/2 204", ...; leaves zeros where unreadable. */
static void parse_status(rc__hop *hop, const char *s, size_t n, size_t base)
{
  size_t i = 5;
  int major = 0, minor = 0, code = 0;
  i += digits(s, n, i, &major, 1);
  if (i < n && s[i] == '.') {
    i++;
    i += digits(s, n, i, &minor, 1);
  }
  hop->version = major * 10 + minor;
  while (i < n && s[i] == ' ')
    i++;
  if (digits(s, n, i, &code, 3) == 3) {
    hop->status = code;
    i += 3;
  }
  while (i < n && s[i] == ' ')
    i++;
  size_t end = n;
  while (end > i && (s[end - 1] == '\r' || s[end - 1] == '\n' || s[end - 1] == ' '))
    end--;
  hop->reason_off = base + i;
  hop->reason_len = end - i;
}

void rc__hops_init(rc__hops *h, rc_pool *pool)
{
  /* Header blocks grow in 4 KiB steps, not body-sized chunks, and are never
   * held back by the budget (see rc_header_cb). */
  rc__buf_init(&h->raw, pool, RAW_LIMIT, 4096);
  h->v = NULL;
  h->n = h->cap = 0;
  h->framed = 0;
}

static rc_code add_hop(rc__hops *h, const rc_limits *lim)
{
  if (h->n >= lim->max_hops)
    return RC_E_HOP_CAP;
  if (h->n == h->cap) {
    size_t cap = h->cap ? h->cap * 2 : 4;
    if (cap > lim->max_hops)
      cap = lim->max_hops;
    const rc_allocator *a = rc__pool_allocator(h->raw.pool);
    rc__hop *v = a->realloc(h->v, cap * sizeof *v, a->ud);
    if (!v)
      return RC_E_NOMEM;
    h->v = v;
    h->cap = cap;
  }
  memset(&h->v[h->n], 0, sizeof h->v[h->n]);
  h->v[h->n].off = h->v[h->n].toff = h->raw.len;
  h->n++;
  return RC_OK;
}

static void read_framing(rc__hops *h, size_t max_codings);

rc_code rc__hops_line(rc__hops *h, const rc_limits *lim, const char *line, size_t n, int *new_hop)
{
  *new_hop = 0;
  rc__hop *cur = h->n ? &h->v[h->n - 1] : NULL;
  int starts = !cur || (cur->ended && is_status_line(line, n));
  if (starts) {
    if (n > lim->max_header_bytes)
      return RC_E_HEADER_CAP;
    rc_code rc = add_hop(h, lim);
    if (rc != RC_OK)
      return rc;
    cur = &h->v[h->n - 1];
  } else if (cur->len + cur->tlen + n > lim->max_header_bytes) {
    return RC_E_HEADER_CAP;
  }
  size_t at = h->raw.len;
  rc_code rc = rc__buf_append(&h->raw, line, n);
  if (rc != RC_OK) {
    if (starts)
      h->n--;
    return rc;
  }
  if (starts) {
    *new_hop = 1;
    if (is_status_line(line, n))
      parse_status(cur, line, n, at);
    cur->len = n;
    cur->toff = at + n;
  } else if (!cur->ended) {
    if (!cur->coff && n && (line[0] == 'C' || line[0] == 'c'))
      cur->coff = at;
    cur->len += n;
    cur->toff = at + n;
    cur->ended = is_blank_line(line, n);
    if (cur->ended)
      read_framing(h, lim->max_codings);
  } else {
    cur->tlen += n; /* after the header block: a trailer */
  }
  return RC_OK;
}

const rc__hop *rc__hops_at(const rc__hops *h, int hop)
{
  if (hop < 0) {
    size_t back = (size_t) - (long long)hop;
    return back <= h->n ? &h->v[h->n - back] : NULL;
  }
  return (size_t)hop < h->n ? &h->v[hop] : NULL;
}

/* End of the line starting at s (past its LF, or e). */
static const char *line_end(const char *s, const char *e)
{
  const char *lf = memchr(s, '\n', (size_t)(e - s));
  return lf ? lf + 1 : e;
}

static const char *trim_eol(const char *s, const char *end)
{
  while (end > s && (end[-1] == '\n' || end[-1] == '\r' || rc__is_ows(end[-1])))
    end--;
  return end;
}

/* The next field of a header block, from *at (a line start) to e: its
 * name and value (a folded value spans its continuation lines; blank ones
 * add nothing). 0 at the blank line that ends the block, or at e. Lines
 * without a colon, and continuation lines with no field before them, are
 * skipped. */
static int next_field(const char **at, const char *e, rc_view *name, rc_view *value)
{
  for (const char *s = *at, *next; s < e; s = next) {
    next = line_end(s, e);
    const char *content_end = trim_eol(s, next);
    if (content_end == s && (*s == '\r' || *s == '\n'))
      break; /* the blank line ends the block */
    if (rc__is_ows(*s))
      continue; /* continuation of a skipped line */
    const char *colon = memchr(s, ':', (size_t)(content_end - s));
    if (!colon)
      continue;
    while (next < e && rc__is_ows(*next)) {
      const char *after = line_end(next, e);
      const char *end = trim_eol(next, after);
      if (end > next)
        content_end = end;
      next = after;
    }
    const char *v = colon + 1;
    while (v < content_end && (rc__is_ows(*v) || *v == '\r' || *v == '\n'))
      v++;
    name->ptr = s;
    name->len = (size_t)(colon - s);
    value->len = content_end > v ? (size_t)(content_end - v) : 0;
    value->ptr = value->len ? v : "";
    *at = next;
    return 1;
  }
  *at = e;
  return 0;
}

/* The fields of hop's header block (past its status line), or of its
 * trailers: start and end. */
static void block_of(const rc__hops *h, const rc__hop *hop, int trailers, const char **s,
                     const char **e)
{
  const char *base = rc__buf_data(&h->raw);
  *s = base + (trailers ? hop->toff : hop->off);
  *e = *s + (trailers ? hop->tlen : hop->len);
  if (!trailers && *s < *e)
    *s = line_end(*s, *e); /* the status line */
}

static int named(rc_view name, const char *want, size_t want_len)
{
  return name.len == want_len && rc__ascii_ieq(name.ptr, want, want_len);
}

rc_code rc__hops_find(const rc__hops *h, const rc__hop *hop, const rc__lookup *q, rc_view *out)
{
  const char *s, *e;
  block_of(h, hop, q->trailers, &s, &e);
  size_t name_len = strlen(q->name), nth = q->nth;
  rc_view name, value;
  while (next_field(&s, e, &name, &value))
    if (named(name, q->name, name_len) && nth-- == 0) {
      *out = value;
      return RC_OK;
    }
  return RC_E_NOT_FOUND;
}

/* A Content-Length value: digits only, at most 19 of them; else none. */
static size_t parse_length(rc_view v)
{
  if (v.len == 0 || v.len > 19)
    return RC__UNKNOWN;
  size_t n = 0;
  for (size_t i = 0; i < v.len; i++) {
    if (v.ptr[i] < '0' || v.ptr[i] > '9')
      return RC__UNKNOWN;
    n = n * 10 + (size_t)(v.ptr[i] - '0');
  }
  return n;
}

/* Reads the last hop's framing in one pass over its header block. */
static void read_framing(rc__hops *h, size_t max_codings)
{
  rc__framing *f = &h->framing;
  const rc__hop *hop = &h->v[h->n - 1];
  f->length = RC__UNKNOWN;
  f->version = hop->version;
  f->codings_rc = RC_OK;
  f->ncodings = 0;
  if (max_codings > RC__MAX_CODINGS)
    max_codings = RC__MAX_CODINGS;
  h->framed = h->n;
  const char *s, *e;
  block_of(h, hop, 0, &s, &e);
  /* Lines before the first that begins with a C frame nothing (a folded
   * line begins with a blank, never with a C). */
  s = hop->coff ? rc__buf_data(&h->raw) + hop->coff : e;
  rc_view name, value, length = {NULL, 0};
  while (next_field(&s, e, &name, &value)) {
    if (named(name, "Content-Length", 14)) {
      length = value;
    } else if (named(name, "Content-Encoding", 16) && f->codings_rc == RC_OK) {
      size_t got;
      f->codings_rc = rc__coding_parse(value.ptr, value.len, f->codings + f->ncodings,
                                       max_codings - f->ncodings, &got);
      if (f->codings_rc == RC_OK)
        f->ncodings += got;
    }
  }
  if (length.ptr)
    f->length = parse_length(length);
}

const rc__framing *rc__hops_framing(rc__hops *h, size_t max_codings)
{
  if (h->n == 0) {
    static const rc__framing none = {RC__UNKNOWN, 0, RC_OK, 0, {RC__CODING_GZIP}};
    return &none;
  }
  if (h->framed != h->n || !h->v[h->n - 1].ended)
    read_framing(h, max_codings);
  return &h->framing;
}

void rc__hops_reset(rc__hops *h)
{
  rc__buf_free(&h->raw);
  h->n = 0;
  h->framed = 0;
}

void rc__hops_free(rc__hops *h)
{
  rc__hops_reset(h);
  const rc_allocator *a = rc__pool_allocator(h->raw.pool);
  a->free(h->v, a->ud);
  h->v = NULL;
  h->cap = 0;
}
